import { upstreamCall, type RpcContext } from '../context.js';
import { quantity, type Awaitable, type MethodAnswer, type MethodResult } from '../types.js';
import { currentHead, logsOf, resolveBound, resultCapError } from '../log-range.js';
import { arrayLength, arrayLongerThan, RawJson } from '../upstream/raw-json.js';
import type { Filter } from '../../../generated/rpc/methods.js';
import type { KnownFilter } from './memo.js';
import { pollPending, pollRaceLost } from './pending.js';

/** What a poll answers, as generated/rpc/methods.ts types eth_getFilterChanges: block hashes or the node's logs. */
type Changes = MethodAnswer<'eth_getFilterChanges'>;
type BlockHashes = Extract<MethodResult<'eth_getFilterChanges'>, string[]>;

const min = (a: bigint, b: bigint) => (a < b ? a : b);
const max = (a: bigint, b: bigint) => (a > b ? a : b);

/** Block filters report at most this many new block hashes per poll; the rest come with the next one. */
const MAX_BLOCKS_PER_POLL = 100n;

const NOTHING: Changes = new RawJson<BlockHashes>('[]');

/**
 * eth_getFilterChanges: entries from the filter's cursor to the head, then a compare-and-set of the cursor
 * (FilterStore.advance). A poll that loses a race re-reads the cursor and fetches again, so nothing is returned twice
 * and nothing is skipped. Polls of one filter in one process run one after the other (FilterMemo.oneAtATime), so races
 * are only between processes. A long-unpolled log filter catches up in steps of RPC_MAX_LOGS_BLOCK_RANGE blocks (halved
 * while a step holds more than RPC_MAX_LOGS_RESULTS logs).
 *
 * Cost: the head comes from the head tracker (no node call while it is live). A filter this process knows to be past
 * the head (filters/memo.ts) is answered [] with no database read at all; otherwise one read. With new blocks: one node
 * call (eth_getLogs, or none for block filters whose hashes the tracker remembers) and one compare-and-set.
 */
export function pollFilterChanges(ctx: RpcContext, id: string): Awaitable<Changes> {
  const key = id.toLowerCase();
  // The commonest poll of all (nothing new since the last one) is answered now: the same decision as poll() makes for a
  // filter the memo knows at a live head, without its promises.
  if (!ctx.filters.memo.polling(key) && nothingDue(ctx, key)) return NOTHING;
  return ctx.filters.memo.oneAtATime(key, () => poll(ctx, id, key));
}

/** Whether a filter this process knows is past the live head: nothing is due, no read of any kind needed. */
function nothingDue(ctx: RpcContext, key: string): boolean {
  const head = ctx.upstream.tracker.head?.number;
  if (head === undefined || !ctx.upstream.headIsLive) return false;
  const f = ctx.filters.memo.get(key);
  if (f === undefined || f.kind === 'pending') return false;
  return f.kind === 'block' ? f.nextBlock > head : logRange(f, head) === undefined;
}

/** The blocks a log filter is due from its cursor to the head (within its own from/to), or undefined when none. */
function logRange(f: KnownFilter, head: bigint): { lower: bigint; upper: bigint } | undefined {
  // A fromBlock of latest (or none) means from the cursor: resolved against 0, it stays below any cursor.
  const lower = max(f.nextBlock, resolveBound(f.criteria.fromBlock, 0n));
  const upper = min(head, resolveBound(f.criteria.toBlock, head));
  return lower <= upper ? { lower, upper } : undefined;
}

async function poll(ctx: RpcContext, id: string, key: string): Promise<Changes> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const head = await currentHead(ctx, true);
    let f: KnownFilter | undefined = ctx.filters.memo.get(key);
    let stale = false;
    if (f === undefined) {
      const row = await ctx.filters.get(id);
      f = { ...row, confirmedAt: Date.now() };
      stale = row.stale;
    }
    // Pending-transaction filters count in seqs of recorded hashes, not blocks (filters/pending.ts).
    if (f.kind === 'pending') return pollPending(ctx, id);
    let entries: Changes = NOTHING;
    let next = f.nextBlock;
    if (f.kind === 'block') {
      const to = min(head, f.nextBlock + MAX_BLOCKS_PER_POLL - 1n);
      if (to >= f.nextBlock) {
        const hashes = await blockHashes(ctx, f.nextBlock, to);
        entries = hashes;
        next = f.nextBlock + BigInt(hashes.length);
      }
    } else {
      const c = f.criteria;
      const range = logRange(f, head);
      if (range !== undefined) {
        const { lower, upper } = range;
        let to = min(upper, lower + BigInt(ctx.config.maxLogsBlockRange) - 1n);
        for (;;) {
          const query: Filter = { fromBlock: quantity(lower), toBlock: quantity(to) };
          if (c.address !== undefined) query.address = c.address;
          if (c.topics !== undefined) query.topics = c.topics;
          // The node's text as the spec's Log[] (never parsed). A range of explicit numbers up to the head: cached
          // until the head moves (or for good once final), so filters with the same criteria polled at the same head
          // share one node call; a new head or a reorg drops it (cache/policy.ts).
          const logs = await logsOf(ctx, query, true);
          const { over, count } = arrayLongerThan(logs, ctx.config.maxLogsResults);
          entries = logs;
          if (!over) break;
          if (to === lower) throw resultCapError(ctx, count!);
          to = lower + (to - lower) / 2n;
        }
        next = to + 1n;
      }
    }
    // Nothing new and polled recently: no write (the expiry clock needs a refresh only now and then).
    if (next === f.nextBlock && !stale && (entries === NOTHING || isEmpty(entries))) return NOTHING;
    if (await ctx.filters.advance(f.id, f.nextBlock, next)) {
      ctx.filters.memo.remember({ ...f, nextBlock: next, confirmedAt: Date.now() });
      return entries;
    }
  }
  throw pollRaceLost(id);
}

const isEmpty = (entries: Changes) =>
  entries instanceof RawJson
    ? entries.length < 64 && arrayLength(entries.text) === 0
    : Array.isArray(entries) && entries.length === 0;

/**
 * Hashes of blocks `from`..`to`: from the head tracker's memory when it holds them all, else from the node in one
 * batch. A block the node does not have yet (another node is ahead) ends the range.
 */
async function blockHashes(ctx: RpcContext, from: bigint, to: bigint): Promise<BlockHashes> {
  const remembered: string[] = [];
  for (let n = from; n <= to; n++) {
    const b = ctx.upstream.tracker.blockAt(n);
    if (!b) break;
    remembered.push(b.hash);
  }
  if (remembered.length === Number(to - from + 1n)) return remembered;
  const numbers: bigint[] = [];
  for (let n = from; n <= to; n++) numbers.push(n);
  const blocks = await Promise.all(numbers.map((n) => upstreamCall(ctx, 'eth_getBlockByNumber', [quantity(n), false])));
  const hashes: BlockHashes = [];
  for (const b of blocks) {
    if (b === null || typeof b.hash !== 'string') break;
    hashes.push(b.hash);
  }
  return hashes;
}
