import type { Logger } from '../../common/log.js';
import type { Log } from '../../../generated/rpc/methods.js';
import { unionAddresses, type LogFilter } from './log-filter.js';
import type { BlockHead, HeadEvent, UpstreamCall } from './types.js';
import { quantity } from '../types.js';

/**
 * The hub's own log reads (one block, or a range the head tracker skipped) for the union of every logs
 * subscription's addresses. The union is not bounded by any one filter's cap (many clients, each under
 * its caps, add up), so the read is cut by bytes: address lists go in several eth_getLogs, each body
 * under `maxRequestBytes` (RPC_UPSTREAM_MAX_BATCH_BYTES, well under a node's body limit), and a union
 * too big for a few such reads is read unfiltered once and matched in memory (one block's logs are
 * usually far smaller than tens of thousands of addresses). A read that keeps failing is given up after
 * a bounded number of attempts and reported, so one bad read can never hold the hub.
 */

/** Bytes one address adds to an eth_getLogs body: `"0x` + 40 hex + `",`. */
const ADDRESS_BYTES = 45;
/** Room for the envelope and the rest of the criteria. */
const CRITERIA_BYTES = 512;
/** More filtered reads than this for one block: read it unfiltered instead (one call, matched in memory). */
const MAX_FILTERED_READS = 4;
/** Attempts of one read before its logs are given up: 50 ms doubling to 2 s between them (~5 s in all). */
export const LOGS_READ_ATTEMPTS = 8;
const RETRY_MS = 50;
const RETRY_MAX_MS = 2_000;
/** The endpoint's own "request/answer too large" (-32005): asking again the same way cannot help. */
const LIMIT_EXCEEDED = -32005;

const pause = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, ms).unref();
  });

export interface LogsReadResult {
  logs: Log[];
  /** Addresses whose logs could not be read ('all': none could); undefined when everything was read. */
  failed?: Set<string> | 'all';
  error?: unknown;
}

export interface BlockLogsReaderOptions {
  upstream: UpstreamCall;
  logger: Logger;
  maxRequestBytes: number;
  stopped(): boolean;
  /** Each eth_getLogs outcome (metrics). */
  onRead?(outcome: 'ok' | 'retry' | 'split' | 'failed'): void;
}

export class BlockLogsReader {
  readonly perRead: number;

  constructor(private readonly o: BlockLogsReaderOptions) {
    this.perRead = Math.max(1, Math.floor((o.maxRequestBytes - CRITERIA_BYTES) / ADDRESS_BYTES));
  }

  /**
   * Logs at `where` (`{blockHash}` or `{fromBlock, toBlock}`) of `addresses` (undefined: every address),
   * in chain order. `gone()` says the block left the chain meanwhile: the read is dropped (undefined).
   */
  async read(
    where: Record<string, unknown>,
    addresses: string[] | undefined,
    gone?: () => boolean,
  ): Promise<LogsReadResult | undefined> {
    if (addresses !== undefined && addresses.length === 0) return { logs: [] };
    if (addresses === undefined || addresses.length > this.perRead * MAX_FILTERED_READS) {
      const whole = await this.attempt(where, undefined, gone);
      if (whole === undefined) return undefined;
      if (!('error' in whole)) return { logs: whole.logs };
      // Only an answer too big for one read is worth asking again by address; a node that keeps failing
      // would fail those too, each after its own attempts.
      if (addresses === undefined || !whole.tooLarge) return { logs: [], failed: 'all', error: whole.error };
    }
    const out: Log[] = [];
    let failed: Set<string> | undefined;
    let error: unknown;
    let parts = 0;
    const pending: string[][] = [];
    for (let i = 0; i < addresses.length; i += this.perRead) pending.push(addresses.slice(i, i + this.perRead));
    while (pending.length > 0) {
      const part = pending.shift()!;
      // Once a part failed after all its attempts, the rest get one each: a node that is failing should
      // not hold the logs queue for every part in turn.
      const r = await this.attempt(where, part, gone, failed ? 1 : LOGS_READ_ATTEMPTS);
      if (r === undefined) return undefined;
      if (!('error' in r)) {
        parts++;
        for (const l of r.logs) out.push(l);
        continue;
      }
      if (r.tooLarge && part.length > 1) {
        // An answer over RPC_MAX_RESPONSE_BYTES: halves, down to one address.
        this.o.onRead?.('split');
        pending.unshift(part.slice(0, part.length >> 1), part.slice(part.length >> 1));
        continue;
      }
      failed ??= new Set();
      for (const a of part) failed.add(a);
      error = r.error;
    }
    // Each part's logs are in order and parts are disjoint by address: sorted by position, all of them are.
    if (parts > 1) out.sort(byPosition);
    return failed ? { logs: out, failed, error } : { logs: out };
  }

  private async attempt(
    where: Record<string, unknown>,
    address: string[] | undefined,
    gone?: () => boolean,
    attempts = LOGS_READ_ATTEMPTS,
  ): Promise<{ logs: Log[] } | { error: unknown; tooLarge: boolean } | undefined> {
    const criteria = address ? { ...where, address } : where;
    for (let attempt = 1; ; attempt++) {
      try {
        const logs = (await this.o.upstream('eth_getLogs', [criteria])) as Log[];
        this.o.onRead?.('ok');
        return { logs };
      } catch (err) {
        if (this.o.stopped()) throw err;
        if (gone?.()) return undefined;
        const tooLarge = (err as { code?: unknown }).code === LIMIT_EXCEEDED;
        if (tooLarge || attempt >= attempts) {
          this.o.onRead?.('failed');
          return { error: err, tooLarge };
        }
        this.o.onRead?.('retry');
        if (attempt === 1)
          this.o.logger.warn(
            { err, where, addresses: address?.length },
            'subscriptions: eth_getLogs failed; asking again',
          );
        await pause(Math.min(RETRY_MAX_MS, RETRY_MS * 2 ** (attempt - 1)));
      }
    }
  }
}

function byPosition(a: Log, b: Log): number {
  const n = BigInt(a.blockNumber) - BigInt(b.blockNumber);
  if (n !== 0n) return n < 0n ? -1 : 1;
  const i = BigInt(a.logIndex) - BigInt(b.logIndex);
  return i < 0n ? -1 : i > 0n ? 1 : 0;
}

/**
 * The logs of a head event for every logs filter: the blocks added, and the range before them when the
 * tracker skipped more blocks than it remembers (`gapFrom`). Read for the addresses of every logs
 * subscription; one added meanwhile that needs more addresses gets them read too (only those).
 */
export async function readEventLogs(
  reader: BlockLogsReader,
  event: HeadEvent,
  gapFrom: bigint | undefined,
  filtersNow: () => LogFilter[],
  leftChain: (b: BlockHead) => boolean,
): Promise<{ missed: LogsReadResult; added: Map<string, LogsReadResult> }> {
  const first = event.added[0]?.number;
  const missed: LogsReadResult = { logs: [] };
  const added = new Map<string, LogsReadResult>();
  let fetched: Set<string> | 'all' | undefined;
  for (;;) {
    const filters = filtersNow();
    if (filters.length === 0) break;
    const union = unionAddresses(filters);
    let want: string[] | undefined;
    if (union === undefined) {
      if (fetched === 'all') break;
      // An unfiltered read replaces whatever was read by address.
      missed.logs = [];
      missed.failed = missed.error = undefined;
      added.clear();
    } else {
      const have = fetched;
      want = have === 'all' ? [] : union.filter((a) => !have?.has(a));
      if (want.length === 0) break;
    }
    if (gapFrom !== undefined) {
      // The tracker lost track of more blocks than it remembers: their logs are read by range instead.
      const r = await reader.read({ fromBlock: quantity(gapFrom), toBlock: quantity(first! - 1n) }, want);
      if (r) merge(missed, r);
    }
    for (const b of event.added) {
      const r = await reader.read({ blockHash: b.hash }, want, () => leftChain(b));
      if (r) merge(added.get(b.hash) ?? added.set(b.hash, { logs: [] }).get(b.hash)!, r);
      else added.delete(b.hash);
    }
    if (want === undefined) fetched = 'all';
    else {
      fetched ??= new Set();
      if (fetched !== 'all') for (const a of want) fetched.add(a);
    }
  }
  return { missed, added };
}

/** Adds a later read's logs (other addresses) and failures to what was read for the same place. */
function merge(into: LogsReadResult, r: LogsReadResult): void {
  if (into.logs.length === 0) into.logs = r.logs;
  else if (r.logs.length > 0) into.logs = [...into.logs, ...r.logs].sort(byPosition);
  if (r.failed === 'all') into.failed = 'all';
  else if (r.failed && into.failed !== 'all') {
    into.failed ??= new Set();
    for (const a of r.failed) into.failed.add(a);
  }
  into.error ??= r.error;
}
