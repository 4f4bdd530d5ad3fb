/**
 * The spam heuristic behind `isPossibleSpam`. Listed tokens are never spam. An unlisted token is flagged
 * when it shows what airdrop and phishing tokens typically show: a link or a call to action in its name
 * or symbol, a symbol that impersonates a listed token, unreadable metadata, or an implausible symbol.
 */
export interface SpamInput {
  name: string;
  symbol: string;
  metadataComplete: boolean;
  listed: boolean;
  /** Lower-cased symbols of listed tokens at other addresses. */
  listedSymbols: ReadonlySet<string>;
}

const LINK =
  /(https?:|www\.|\.(com|io|org|net|xyz|app|finance|site|online|top|vip|info|co|me|gift|claims?)\b|t\.me\/)/i;
const LURE = /\b(claim|airdrop|reward|voucher|bonus|free|visit|gift|redeem|eligible|access)\b/i;

export function spamReasons(t: SpamInput): string[] {
  if (t.listed) return [];
  const reasons: string[] = [];
  const text = `${t.name} ${t.symbol}`;
  if (LINK.test(text)) reasons.push('link in name or symbol');
  if (LURE.test(text)) reasons.push('call to action in name or symbol');
  if (t.listedSymbols.has(t.symbol.toLowerCase())) reasons.push('symbol of a listed token');
  if (!t.metadataComplete) reasons.push('metadata unreadable');
  if (t.symbol.length > 20 || /\s/.test(t.symbol)) reasons.push('implausible symbol');
  return reasons;
}

export const isPossibleSpam = (t: SpamInput): boolean => spamReasons(t).length > 0;
