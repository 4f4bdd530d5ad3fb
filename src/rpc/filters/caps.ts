import { RpcError } from '../../common/errors.js';
import type { RpcConfig } from '../config.js';
import { RpcCodes } from '../errors.js';
import type { Filter as LogCriteria } from '../../../generated/rpc/methods.js';

type CriteriaCaps = Pick<RpcConfig, 'maxFilterAddresses' | 'maxFilterTopics'>;
/** RPC_MAX_FILTERS_PER_CLIENT and RPC_MAX_FILTERS (with the TTL the errors mention). */
export type FilterCountCaps = Pick<RpcConfig, 'maxFiltersPerClient' | 'maxFilters' | 'filterTtlSeconds'>;

/**
 * Criteria too large are -32602: they are a property of the params, and the same call never succeeds
 * on retry (geth refuses more than 1,000 addresses or 1,000 topics per position the same way). Before
 * these caps one eth_newFilter with 22,000 addresses stored a 1 MB row, and such rows made the embedded
 * database grow by hundreds of MiB per round of filters. The same caps apply to eth_getLogs, so a query
 * cannot be made arbitrarily expensive for the upstream node either.
 */
export function checkCriteria(caps: CriteriaCaps, criteria: LogCriteria): void {
  const addresses = criteria.address === undefined ? 0 : Array.isArray(criteria.address) ? criteria.address.length : 1;
  if (addresses > caps.maxFilterAddresses) {
    throw tooLarge(
      `filter.address holds ${addresses} addresses; at most ${caps.maxFilterAddresses} per filter (RPC_MAX_FILTER_ADDRESSES). Split the query.`,
      'RPC_MAX_FILTER_ADDRESSES',
      caps.maxFilterAddresses,
      addresses,
    );
  }
  let total = 0;
  for (const [position, topic] of (criteria.topics ?? []).entries()) {
    const count = topic === null ? 0 : Array.isArray(topic) ? topic.length : 1;
    if (count > caps.maxFilterTopics) {
      throw tooLarge(
        `filter.topics[${position}] holds ${count} topics; at most ${caps.maxFilterTopics} per position and in all positions together (RPC_MAX_FILTER_TOPICS). Split the query.`,
        'RPC_MAX_FILTER_TOPICS',
        caps.maxFilterTopics,
        count,
      );
    }
    total += count;
  }
  if (total > caps.maxFilterTopics) {
    throw tooLarge(
      `filter.topics holds ${total} topics in all positions together; at most ${caps.maxFilterTopics} per position and in all positions together (RPC_MAX_FILTER_TOPICS). Split the query.`,
      'RPC_MAX_FILTER_TOPICS',
      caps.maxFilterTopics,
      total,
    );
  }
}

const tooLarge = (detail: string, cap: string, limit: number, received: number) =>
  new RpcError(RpcCodes.InvalidParams, `invalid params: ${detail}`, { cap, limit, received });

/**
 * Counts of live filters are -32005 (limit exceeded): the call is fine and succeeds once filters are
 * uninstalled or expire, like a rate limit.
 */
export function perClientCapError(caps: FilterCountCaps, live: number): RpcError {
  return new RpcError(
    RpcCodes.LimitExceeded,
    `limit exceeded: this client already has ${live} live filters; at most ${caps.maxFiltersPerClient} per client (RPC_MAX_FILTERS_PER_CLIENT). Uninstall filters with eth_uninstallFilter or let them expire (RPC_FILTER_TTL_SECONDS: ${caps.filterTtlSeconds} s without a poll).`,
    { cap: 'RPC_MAX_FILTERS_PER_CLIENT', limit: caps.maxFiltersPerClient },
  );
}

export function totalCapError(caps: FilterCountCaps, live: number): RpcError {
  return new RpcError(
    RpcCodes.LimitExceeded,
    `limit exceeded: the endpoint holds ${live} live filters, at most ${caps.maxFilters} in all (RPC_MAX_FILTERS). Retry after filters expire (RPC_FILTER_TTL_SECONDS: ${caps.filterTtlSeconds} s without a poll).`,
    { cap: 'RPC_MAX_FILTERS', limit: caps.maxFilters },
  );
}
