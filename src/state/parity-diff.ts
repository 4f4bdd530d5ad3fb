import { fromHex, word } from './bytes.js';
import { markDeleted, slotKey, slotValue } from './diff.js';
import type { AccountChange, AccountFields } from './state.js';

/**
 * From `trace_replayBlockTransactions(n, ['stateDiff'])` (the parity-style trace of geth's rivals: Besu,
 * Erigon, Nethermind, anvil) to the block's net change per account, the same shape `blockChanges` makes
 * of a prestateTracer diff. Each field of an account is a delta: `"="` unchanged, `{"+": v}` born with v,
 * `{"-": v}` gone (was v), `{"*": {from, to}}` changed. An account whose fields are gone was deleted.
 *
 * Why a second source: anvil 1.7.1 can deadlock when a prestateTracer trace runs while it mines (the trace
 * takes its chain-storage read lock twice; a miner queued for the write lock between the two blocks the
 * second read, and both wait for ever), and then answers nothing at all. Its parity replay takes one lock
 * once. It also replays the block once rather than once per transaction.
 */
type Delta<T> = '=' | { '+': T } | { '-': T } | { '*': { from: T; to: T } };
export interface ParityAccountDiff {
  balance?: Delta<string>;
  nonce?: Delta<string>;
  code?: Delta<string>;
  storage?: Record<string, Delta<string>>;
}
export type ParityBlockReplay = { stateDiff?: Record<string, ParityAccountDiff> | null; transactionHash?: string }[];

const ZERO = word(0);

const isObject = (d: unknown): d is Record<string, unknown> => typeof d === 'object' && d !== null;
const gone = (d: Delta<string> | undefined): boolean => isObject(d) && '-' in d;
const born = (d: Delta<string> | undefined): boolean => isObject(d) && '+' in d;
/** The value after the transaction, or undefined when the delta leaves it as it was. */
function after(d: Delta<string> | undefined, what: string): string | undefined {
  if (d === undefined || d === '=') return undefined;
  if (!isObject(d)) throw new Error(`${what}: not a state-diff delta: ${JSON.stringify(d)}`);
  if ('+' in d) return d['+'];
  if ('*' in d) return d['*'].to;
  if ('-' in d) return undefined;
  throw new Error(`${what}: not a state-diff delta: ${JSON.stringify(d)}`);
}
/** The value before the transaction, when the delta says it ('=' does not: the caller's default stands). */
function before(d: Delta<string> | undefined): string | undefined {
  if (!isObject(d)) return undefined;
  if ('*' in d) return d['*'].from;
  if ('-' in d) return d['-'];
  return undefined;
}

/**
 * Reads an account's fields as the chain had them before the block (the ingest asks the upstream at the parent block).
 */
export type BeforeLoader = (address: string, fields: (keyof AccountFields)[]) => Promise<AccountFields>;

export function parityBlockChanges(replay: ParityBlockReplay, loadBefore?: BeforeLoader): AccountChange[] {
  if (!Array.isArray(replay)) throw new Error('trace_replayBlockTransactions did not answer an array');
  const net = new Map<string, AccountChange>();
  for (const [i, tx] of replay.entries()) {
    if (!isObject(tx) || !isObject(tx.stateDiff)) throw new Error(`replay entry ${i} has no stateDiff`);
    for (const [addr, diff] of Object.entries(tx.stateDiff)) {
      const what = `replay entry ${i}, account ${addr}`;
      const address = addr.toLowerCase();
      let ch = net.get(address);
      if (!ch) {
        ch = { address, deleted: false, storage: new Map() };
        // What the chain had, for an account this tree has not seen: what the deltas say, and the fields
        // they leave alone ('=') read from the chain, but only if the tree turns out not to know the account
        // (an account of the chain's genesis missing from STATE_GENESIS_ACCOUNTS, e.g. anvil's CREATE2
        // factory). Without a loader they read as empty, which holds for accounts created after genesis.
        if (!born(diff.balance) && !born(diff.nonce)) {
          const code = before(diff.code);
          ch.before = {
            balance: BigInt(before(diff.balance) ?? 0),
            nonce: BigInt(before(diff.nonce) ?? 0),
            code: code === undefined ? new Uint8Array(0) : fromHex(code),
          };
          const unknown = (['nonce', 'balance', 'code'] as const).filter((f) => before(diff[f]) === undefined);
          if (loadBefore && unknown.length > 0) ch.loadBefore = () => loadBefore(address, unknown);
        }
        net.set(address, ch);
      }
      if (gone(diff.balance) || gone(diff.nonce) || gone(diff.code)) {
        markDeleted(ch);
        continue;
      }
      ch.deleted = false;
      const balance = after(diff.balance, `${what} balance`);
      const nonce = after(diff.nonce, `${what} nonce`);
      const code = after(diff.code, `${what} code`);
      if (balance !== undefined) ch.balance = BigInt(balance);
      if (nonce !== undefined) ch.nonce = BigInt(nonce);
      if (code !== undefined) ch.code = fromHex(code);
      for (const [slot, d] of Object.entries(diff.storage ?? {})) {
        if (d === '=') continue;
        const v = after(d, `${what} slot ${slot}`);
        ch.storage.set(slotKey(slot), v === undefined ? ZERO : slotValue(v));
      }
    }
  }
  return [...net.values()];
}
