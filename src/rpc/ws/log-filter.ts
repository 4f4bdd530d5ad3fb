import type { Log } from '../../../generated/rpc/methods.js';
import { isHexOfLength } from '../../common/eth/hex.js';

/**
 * The filter of a `logs` subscription (eth_subscribe("logs", {address, topics})), checked and normalized
 * once, and matched against logs in memory: every subscription of a replica is served from one
 * eth_getLogs per block.
 */
export interface LogFilter {
  /** Lowercase addresses; undefined: any address. */
  addresses?: string[];
  /** Per position: undefined/null = any topic; otherwise one of these lowercase topics. */
  topics: (string[] | undefined)[];
}

export class LogFilterError extends Error {
  override name = 'LogFilterError';
}

/** Parses the filter object of eth_subscribe("logs", …); limits are RPC_MAX_FILTER_ADDRESSES / _TOPICS. */
export function parseLogFilter(raw: unknown, limits: { maxAddresses: number; maxTopics: number }): LogFilter {
  if (raw === undefined || raw === null) return { topics: [] };
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new LogFilterError('the logs filter must be an object with optional "address" and "topics"');
  const { address, topics, ...rest } = raw as { address?: unknown; topics?: unknown };
  const extra = Object.keys(rest);
  if (extra.length > 0)
    throw new LogFilterError(
      `the logs filter takes only "address" and "topics", got "${extra[0]}" (a subscription follows new blocks: no fromBlock/toBlock/blockHash)`,
    );
  let addresses: string[] | undefined;
  if (address !== undefined && address !== null) {
    const list = Array.isArray(address) ? address : [address];
    if (list.length > limits.maxAddresses)
      throw new LogFilterError(
        `the logs filter has ${list.length} addresses; at most ${limits.maxAddresses} (RPC_MAX_FILTER_ADDRESSES)`,
      );
    for (const a of list)
      if (typeof a !== 'string' || !isHexOfLength(a, 20))
        throw new LogFilterError(`filter address must be 20 bytes of hex, got ${JSON.stringify(a)?.slice(0, 60)}`);
    addresses = [...new Set((list as string[]).map((a) => a.toLowerCase()))];
  }
  const out: (string[] | undefined)[] = [];
  if (topics !== undefined && topics !== null) {
    if (!Array.isArray(topics)) throw new LogFilterError('filter topics must be an array');
    if (topics.length > 4)
      throw new LogFilterError(`filter topics has ${topics.length} positions; a log has at most 4`);
    let count = 0;
    for (const t of topics) {
      if (t === null) {
        out.push(undefined);
        continue;
      }
      const alts = Array.isArray(t) ? t : [t];
      for (const x of alts)
        if (typeof x !== 'string' || !isHexOfLength(x, 32))
          throw new LogFilterError(`filter topics must be 32-byte hex values, got ${JSON.stringify(x)?.slice(0, 80)}`);
      count += alts.length;
      out.push(alts.length === 0 ? undefined : (alts as string[]).map((x) => x.toLowerCase()));
    }
    if (count > limits.maxTopics)
      throw new LogFilterError(
        `the logs filter has ${count} topics; at most ${limits.maxTopics} (RPC_MAX_FILTER_TOPICS)`,
      );
  }
  return { addresses, topics: out };
}

export function matches(filter: LogFilter, log: Pick<Log, 'address' | 'topics'>): boolean {
  if (filter.addresses && !filter.addresses.includes(log.address.toLowerCase())) return false;
  for (let i = 0; i < filter.topics.length; i++) {
    const want = filter.topics[i];
    if (want === undefined) continue;
    const have = log.topics[i];
    if (have === undefined || !want.includes(have.toLowerCase())) return false;
  }
  return true;
}

/** The eth_getLogs address member that covers every filter (undefined: some filter wants any address). */
export function unionAddresses(filters: Iterable<LogFilter>): string[] | undefined {
  const all = new Set<string>();
  for (const f of filters) {
    if (!f.addresses) return undefined;
    for (const a of f.addresses) all.add(a);
  }
  return [...all];
}
