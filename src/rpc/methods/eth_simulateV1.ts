import type { CallObject, SimulatePayload } from '../../../generated/rpc/methods.js';
import { rpcErrors } from '../../common/errors.js';
import { defineMethod } from '../context.js';
import type { MethodResult } from '../types.js';
import { capGas } from '../evm-bounds.js';
import type { RawJson } from '../upstream/raw-json.js';

const hex = (n: bigint) => `0x${n.toString(16)}`;

/** -32005 naming the bound and its variable, as the other limits say it (data: {cap, limit}). */
const tooBig = (what: string, count: number | bigint, limit: number | bigint, variable: string) =>
  rpcErrors.limitExceeded(`eth_simulateV1: ${what} ${count} is above this endpoint's limit of ${limit} (${variable}); split the simulation`, {
    cap: variable,
    limit: typeof limit === 'bigint' ? hex(limit) : limit,
  });

/**
 * The payload with its size and gas bounded. Blocks and calls are counted first (RPC_SIMULATE_MAX_BLOCKS,
 * RPC_SIMULATE_MAX_CALLS). Gas follows geth's rule for simulations: RPC_GAS_CAP is the budget of the whole
 * simulation, not of each call, since the calls run one after the other on one node. A call's own gas is
 * bounded as eth_call's (capGas: above the cap is -32602); the given gases together may not pass the cap
 * (-32005); calls without gas get equal shares of what is left, so the node never picks an unbounded
 * allowance (anvil has none of its own: it ran a 2,000,000,000 block gas limit as asked).
 */
export function boundSimulation(payload: SimulatePayload, limits: { maxBlocks: number; maxCalls: number; gasCap: bigint }): SimulatePayload {
  const blocks = payload.blockStateCalls;
  if (blocks.length > limits.maxBlocks) throw tooBig('blockStateCalls has', blocks.length, limits.maxBlocks, 'RPC_SIMULATE_MAX_BLOCKS');
  const calls = blocks.reduce((n, b) => n + (b.calls?.length ?? 0), 0);
  if (calls > limits.maxCalls) throw tooBig('the number of calls', calls, limits.maxCalls, 'RPC_SIMULATE_MAX_CALLS');
  let given = 0n;
  let open = 0n;
  blocks.forEach((b, i) =>
    (b.calls ?? []).forEach((c, j) => {
      if (c.gas === undefined) open++;
      else given += BigInt(capGas(c, limits.gasCap, `param 0 (payload).blockStateCalls[${i}].calls[${j}]`).gas);
    }),
  );
  if (given > limits.gasCap) throw tooBig('the gas of all calls together', given, limits.gasCap, 'RPC_GAS_CAP');
  if (open === 0n) return payload;
  const share = (limits.gasCap - given) / open;
  if (share < 21_000n) throw tooBig(`the gas left for ${open} calls without gas (${limits.gasCap - given}) is too little: the gas of all calls together`, given, limits.gasCap, 'RPC_GAS_CAP');
  const withGas = (c: CallObject): CallObject => (c.gas === undefined ? { ...c, gas: hex(share) } : c);
  return { ...payload, blockStateCalls: blocks.map((b) => (b.calls ? { ...b, calls: b.calls.map(withGas) } : b)) };
}

/**
 * eth_simulateV1: bounded (boundSimulation), then run through the pool's compute gate (RPC_EVM_TIMEOUT_MS,
 * RPC_EVM_MAX_CONCURRENT, time charged in rate units) and answered as the node wrote it.
 */
export default defineMethod('eth_simulateV1', async (ctx, [payload, block], call) => {
  const bounded = boundSimulation(payload, { ...ctx.config.simulate, gasCap: ctx.config.evm.gasCap });
  const raw = await ctx.upstream.compute('eth_simulateV1', [bounded, block ?? 'latest'], { budget: call.budget });
  return raw as RawJson<MethodResult<'eth_simulateV1'>>;
});
