import { hexToBytes } from '../common/eth/hex.js';

/** One RLP item's header: where its payload starts and ends, and whether it is a list. */
function item(b: Uint8Array, at: number): { start: number; end: number; list: boolean } {
  const p = b[at];
  if (p === undefined) throw new Error('truncated RLP');
  const long = (lenOfLen: number) => {
    let len = 0;
    for (let i = 1; i <= lenOfLen; i++) len = len * 256 + (b[at + i] ?? 0);
    return { start: at + 1 + lenOfLen, end: at + 1 + lenOfLen + len };
  };
  let r: { start: number; end: number; list: boolean };
  if (p < 0x80) r = { start: at, end: at + 1, list: false };
  else if (p <= 0xb7) r = { start: at + 1, end: at + 1 + p - 0x80, list: false };
  else if (p <= 0xbf) r = { ...long(p - 0xb7), list: false };
  else if (p <= 0xf7) r = { start: at + 1, end: at + 1 + p - 0xc0, list: true };
  else r = { ...long(p - 0xf7), list: true };
  if (r.end > b.length) throw new Error('truncated RLP');
  return r;
}

const uint = (b: Uint8Array, start: number, end: number): bigint => {
  let v = 0n;
  for (let i = start; i < end; i++) v = (v << 8n) | BigInt(b[i]!);
  return v;
};

/**
 * The chain id a signed transaction was signed for, read from its own bytes: the first field of a typed
 * envelope (EIP-2718: 0x01, 0x02, 0x03, 0x04 all start with chainId), or EIP-155's v of a legacy one. Undefined
 * for a legacy transaction signed without a chain id (valid on every chain, so never ours to send). Reads only
 * the headers it needs: it runs before every broadcast.
 */
export function signedChainId(raw: string): bigint | undefined {
  const b = hexToBytes(raw, 'signed transaction');
  if (b.length === 0) throw new Error('empty transaction');
  if (b[0]! <= 0x7f) {
    const list = item(b, 1);
    if (!list.list) throw new Error('typed transaction payload is not an RLP list');
    const first = item(b, list.start);
    return uint(b, first.start, first.end);
  }
  const list = item(b, 0);
  if (!list.list) throw new Error('legacy transaction is not an RLP list');
  let at = list.start;
  for (let field = 0; field < 6; field++) at = item(b, at).end; // nonce, gasPrice, gas, to, value, data
  const v = item(b, at);
  const value = uint(b, v.start, v.end);
  return value >= 35n ? (value - 35n) / 2n : undefined;
}

/**
 * Why a stored signed transaction must not go to `chainId`, or undefined when it may: it was signed for another
 * chain (a database of other chains, a changed *_RPC_URL), carries no chain id, or cannot be read.
 */
export function foreignChainReason(raw: string, chainId: bigint): string | undefined {
  let signedFor: bigint | undefined;
  try {
    signedFor = signedChainId(raw);
  } catch (err) {
    return `its stored signed bytes cannot be read (${(err as Error).message})`;
  }
  if (signedFor === undefined) return 'it was signed without a chain id (pre-EIP-155)';
  if (signedFor !== chainId) return `it was signed for chain id ${signedFor}, the destination is chain id ${chainId}`;
  return undefined;
}
