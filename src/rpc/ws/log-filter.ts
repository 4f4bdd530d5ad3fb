import type { Log } from '../../../generated/rpc/methods.js';
import type { MethodParams } from '../types.js';

/**
 * The filter of a `logs` subscription (eth_subscribe("logs", {address, topics})), checked and normalized once, and
 * matched against logs in memory: every subscription of a replica is served from one eth_getLogs per block.
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

/**
 * The filter object of eth_subscribe("logs", …) normalized. Its shape (an object of address and topics, 20- and 32-byte
 * hex, at most 4 positions) was checked against the spec's LogsSubscriptionFilter before the call got here; what is
 * left are the counts: RPC_MAX_FILTER_ADDRESSES / _TOPICS.
 */
export function parseLogFilter(
  raw: MethodParams<'eth_subscribe'>[1],
  limits: { maxAddresses: number; maxTopics: number },
): LogFilter {
  if (raw === undefined || raw === null) return { topics: [] };
  let addresses: string[] | undefined;
  if (raw.address !== undefined) {
    const list = Array.isArray(raw.address) ? raw.address : [raw.address];
    if (list.length > limits.maxAddresses)
      throw new LogFilterError(
        `the logs filter has ${list.length} addresses; at most ${limits.maxAddresses} (RPC_MAX_FILTER_ADDRESSES)`,
      );
    addresses = [...new Set(list.map((a) => a.toLowerCase()))];
  }
  const out: (string[] | undefined)[] = [];
  let count = 0;
  for (const t of raw.topics ?? []) {
    const alts = t === null ? [] : Array.isArray(t) ? t : [t];
    count += alts.length;
    out.push(alts.length === 0 ? undefined : alts.map((x) => x.toLowerCase()));
  }
  if (count > limits.maxTopics)
    throw new LogFilterError(
      `the logs filter has ${count} topics; at most ${limits.maxTopics} (RPC_MAX_FILTER_TOPICS)`,
    );
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
