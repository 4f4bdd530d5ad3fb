import { readFile } from 'node:fs/promises';

/** One entry of a token list (https://tokenlists.org schema; only the fields we use). */
export interface ListedToken {
  address: string;
  symbol: string;
  name: string;
  logoURI: string | undefined;
}

interface RawList {
  tokens?: { chainId?: unknown; address?: unknown; symbol?: unknown; name?: unknown; logoURI?: unknown }[];
}

const isAbsoluteUri = (s: string) => {
  try {
    return Boolean(new URL(s).protocol);
  } catch {
    return false;
  }
};

/** Parses a token list, keeping the well-formed entries for `chainId`, keyed by lower-case address. */
export function parseTokenList(json: unknown, chainId: number): Map<string, ListedToken> {
  const list = json as RawList;
  if (typeof list !== 'object' || list === null || !Array.isArray(list.tokens))
    throw new Error('not a token list: no "tokens" array');
  const out = new Map<string, ListedToken>();
  for (const t of list.tokens) {
    if (Number(t.chainId) !== chainId || typeof t.address !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(t.address))
      continue;
    const logo = typeof t.logoURI === 'string' && isAbsoluteUri(t.logoURI) ? t.logoURI : undefined;
    out.set(t.address.toLowerCase(), {
      address: t.address.toLowerCase(),
      symbol: typeof t.symbol === 'string' ? t.symbol : '',
      name: typeof t.name === 'string' ? t.name : '',
      logoURI: logo,
    });
  }
  return out;
}

/** Loads a token list from an http(s) URL or a file path. */
export async function loadTokenList(
  source: string,
  chainId: number,
  signal?: AbortSignal,
): Promise<Map<string, ListedToken>> {
  let text: string;
  if (/^https?:\/\//i.test(source)) {
    const res = await fetch(source, {
      signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(15_000)]) : AbortSignal.timeout(15_000),
    });
    if (!res.ok) throw new Error(`token list ${source}: HTTP ${res.status}`);
    text = await res.text();
  } else {
    text = await readFile(source.replace(/^file:\/\//, ''), 'utf8');
  }
  return parseTokenList(JSON.parse(text), chainId);
}
