import { RpcError } from '../../common/errors.js';
import type { RpcContext } from '../context.js';
import { RpcCodes } from '../errors.js';
import { currentHead, resultCapError } from '../logs.js';

const hex = (n: bigint) => `0x${n.toString(16)}`;
const min = (a: bigint, b: bigint) => (a < b ? a : b);
const max = (a: bigint, b: bigint) => (a > b ? a : b);

/** Block filters report at most this many new block hashes per poll; the rest come with the next one. */
const MAX_BLOCKS_PER_POLL = 100n;

/**
 * eth_getFilterChanges: entries from the filter's cursor to the head, then a compare-and-set of the
 * cursor (FilterStore.advance). A poll that loses a race re-reads the cursor and fetches again, so
 * nothing is returned twice and nothing is skipped. A long-unpolled log filter catches up in steps of
 * RPC_MAX_LOGS_BLOCK_RANGE blocks (halved while a step holds more than RPC_MAX_LOGS_RESULTS logs).
 */
export async function pollFilterChanges(ctx: RpcContext, id: string): Promise<unknown[]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const f = await ctx.filters.get(id);
    const head = await currentHead(ctx, true);
    let entries: unknown[] = [];
    let next = f.nextBlock;
    if (f.kind === 'block') {
      const to = min(head, f.nextBlock + MAX_BLOCKS_PER_POLL - 1n);
      if (to >= f.nextBlock) {
        const numbers: bigint[] = [];
        for (let n = f.nextBlock; n <= to; n++) numbers.push(n);
        const blocks = (await Promise.all(numbers.map((n) => ctx.upstream.request('eth_getBlockByNumber', [hex(n), false])))) as ({ hash: string } | null)[];
        // A block the upstream does not have yet (another node is ahead) ends this poll's range.
        const known = blocks.findIndex((b) => b === null);
        const usable = known === -1 ? blocks : blocks.slice(0, known);
        entries = usable.map((b) => b!.hash);
        next = f.nextBlock + BigInt(usable.length);
      }
    } else {
      const c = f.criteria;
      const lower = c.fromBlock !== undefined && c.fromBlock !== 'latest' ? max(f.nextBlock, c.fromBlock === 'earliest' ? 0n : BigInt(c.fromBlock)) : f.nextBlock;
      const upper = c.toBlock !== undefined && c.toBlock !== 'latest' ? min(head, c.toBlock === 'earliest' ? 0n : BigInt(c.toBlock)) : head;
      if (lower <= upper) {
        let to = min(upper, lower + BigInt(ctx.config.maxLogsBlockRange) - 1n);
        for (;;) {
          const query: Record<string, unknown> = { fromBlock: hex(lower), toBlock: hex(to) };
          if (c.address !== undefined) query.address = c.address;
          if (c.topics !== undefined) query.topics = c.topics;
          entries = (await ctx.upstream.request('eth_getLogs', [query])) as unknown[];
          if (entries.length <= ctx.config.maxLogsResults) break;
          if (to === lower) throw resultCapError(ctx, entries.length);
          to = lower + (to - lower) / 2n;
        }
        next = to + 1n;
      }
    }
    // Nothing new and polled recently: no write (the expiry clock needs a refresh only now and then).
    if (next === f.nextBlock && entries.length === 0 && !f.stale) return entries;
    if (await ctx.filters.advance(f.id, f.nextBlock, next)) return entries;
  }
  throw new RpcError(RpcCodes.LimitExceeded, `filter ${id} is being polled by too many callers at once; poll it from one place`);
}
