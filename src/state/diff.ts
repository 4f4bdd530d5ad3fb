import { fromHex, word, type Bytes } from './bytes.js';
import type { AccountChange } from './state.js';

/**
 * From `debug_traceBlockByNumber(n, {tracer: 'prestateTracer', tracerConfig: {diffMode: true}})` to the
 * block's net change per account. Per transaction, `pre` holds the touched accounts before it (fields at
 * zero omitted) and `post` only what changed; an account in `pre` but not in `post` was deleted, and a
 * slot in `pre.storage` but not in `post.storage` was set to zero. Transactions are folded in order.
 */
export interface PrestateAccount {
  balance?: string;
  nonce?: number | string;
  code?: string;
  storage?: Record<string, string>;
}
export interface PrestateDiff {
  pre?: Record<string, PrestateAccount>;
  post?: Record<string, PrestateAccount>;
}
/** One entry per transaction; anvil adds txHash, geth does too, neither is needed. */
export type BlockTrace = { result: PrestateDiff; txHash?: string }[];

const ZERO = word(0);
const big = (v: string | number | undefined): bigint => (v === undefined ? 0n : BigInt(v));
const code = (v: string | undefined): Bytes => (v === undefined ? new Uint8Array(0) : fromHex(v));
/**
 * A slot as the tree keys it (0x + 64 lowercase hex digits), and a slot's value as a 32-byte word: shared by both diff
 * sources.
 */
export const slotKey = (s: string): string => `0x${s.replace(/^0x/i, '').toLowerCase().padStart(64, '0')}`;
export const slotValue = (v: string): Bytes => {
  const b = fromHex(`0x${v.replace(/^0x/i, '').padStart(64, '0')}`);
  if (b.length !== 32) throw new Error(`storage value is not a 32-byte word: ${v}`);
  return b;
};

/** An account deleted in the block: if it comes back later in the block, it starts from nothing (both diff sources). */
export function markDeleted(ch: AccountChange): void {
  Object.assign(ch, { deleted: true, clearStorage: true, nonce: 0n, balance: 0n, code: new Uint8Array(0) });
  ch.storage = new Map();
}

export function blockChanges(trace: BlockTrace): AccountChange[] {
  const net = new Map<string, AccountChange>();
  for (const [i, tx] of trace.entries()) {
    const diff = tx.result;
    if (!diff || typeof diff !== 'object') throw new Error(`trace entry ${i} has no prestate diff`);
    const pre = diff.pre ?? {};
    const post = diff.post ?? {};
    for (const addr of new Set([...Object.keys(pre), ...Object.keys(post)])) {
      const address = addr.toLowerCase();
      let ch = net.get(address);
      const before = pre[addr];
      if (!ch) {
        ch = { address, deleted: false, storage: new Map() };
        if (before) ch.before = { nonce: big(before.nonce), balance: big(before.balance), code: code(before.code) };
        net.set(address, ch);
      }
      const after = post[addr];
      if (!after) {
        markDeleted(ch);
        continue;
      }
      ch.deleted = false;
      if (after.balance !== undefined) ch.balance = big(after.balance);
      if (after.nonce !== undefined) ch.nonce = big(after.nonce);
      if (after.code !== undefined) ch.code = code(after.code);
      for (const slot of Object.keys(before?.storage ?? {}))
        if (!(slot in (after.storage ?? {}))) ch.storage.set(slotKey(slot), ZERO);
      for (const [slot, v] of Object.entries(after.storage ?? {})) ch.storage.set(slotKey(slot), slotValue(v));
    }
  }
  return [...net.values()];
}
