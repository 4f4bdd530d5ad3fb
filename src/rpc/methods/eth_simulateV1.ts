import type { CallObject, SimulatePayload } from '../../../generated/rpc/methods.js';
import { RpcError, rpcErrors } from '../../common/errors.js';
import { defineMethod } from '../context.js';
import { quantity, type MethodResult } from '../types.js';
import { capGas } from '../evm-bounds.js';
import type { RawJson } from '../upstream/raw-json.js';

const min = (a: bigint, b: bigint) => (a < b ? a : b);

/** execution-apis' code for a simulated block whose calls ask more gas than the block has left. */
const BLOCK_GAS_LIMIT_REACHED = -38015;

/** Runs of one simulation at most: the first measures, the next fill as the node does (see below). */
const MAX_PASSES = 3;

/** -32005 naming the bound and its variable, as the other limits say it (data: {cap, limit}). */
const tooBig = (what: string, count: number | bigint, limit: number | bigint, variable: string) =>
  rpcErrors.limitExceeded(
    `eth_simulateV1: ${what} ${count} is above this endpoint's limit of ${limit} (${variable}); split the simulation`,
    { cap: variable, limit: typeof limit === 'bigint' ? quantity(limit) : limit },
  );

/**
 * The payload with its size and gas bounded, as first sent. Blocks and calls are counted first
 * (RPC_SIMULATE_MAX_BLOCKS, RPC_SIMULATE_MAX_CALLS). A call's own gas is bounded as eth_call's (capGas:
 * above the cap is -32602); the given gases together may not pass RPC_GAS_CAP (-32005), the budget of the
 * whole simulation in geth. Calls without gas get equal shares of what is left for this first run, so the
 * node never picks an unbounded allowance (anvil has none: it ran a 2,000,000,000 block gas limit as
 * asked); what they use there is what gasAsTheNodeFills needs.
 */
function boundSimulation(
  payload: SimulatePayload,
  limits: { maxBlocks: number; maxCalls: number; gasCap: bigint },
): SimulatePayload {
  const blocks = payload.blockStateCalls;
  if (blocks.length > limits.maxBlocks)
    throw tooBig('blockStateCalls has', blocks.length, limits.maxBlocks, 'RPC_SIMULATE_MAX_BLOCKS');
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
  if (share < 21_000n)
    throw tooBig(
      `the gas left for ${open} calls without gas (${limits.gasCap - given}) is too little: the gas of all calls together`,
      given,
      limits.gasCap,
      'RPC_GAS_CAP',
    );
  const withGas = (c: CallObject): CallObject => (c.gas === undefined ? { ...c, gas: quantity(share) } : c);
  return { ...payload, blockStateCalls: blocks.map((b) => (b.calls ? { ...b, calls: b.calls.map(withGas) } : b)) };
}

/** What gasAsTheNodeFills reads of a run: each block's number, gas limit and each call's gas used. */
export interface MeasuredBlock {
  number?: string;
  gasLimit: string;
  calls: { gasUsed: string }[];
}

/**
 * The answered block of each requested block. geth answers the empty blocks it puts in where a
 * blockOverrides.number skips ahead (anvil 1.7.1 does not), so a requested block with a number is the
 * answered block of that number, and one without is the next.
 */
function answeredBlocks(payload: SimulatePayload, measured: readonly MeasuredBlock[]): (MeasuredBlock | undefined)[] {
  let k = 0;
  return payload.blockStateCalls.map((b) => {
    const wanted = b.blockOverrides?.number;
    if (wanted !== undefined) while (k < measured.length && BigInt(measured[k]!.number ?? wanted) < BigInt(wanted)) k++;
    return measured[k++];
  });
}

const blockFull = (i: number, j: number, used: bigint, gas: bigint, limit: bigint) =>
  new RpcError(
    BLOCK_GAS_LIMIT_REACHED,
    `block gas limit reached: blockStateCalls[${i}].calls[${j}] needs ${gas} gas, ${used} of the block's ${limit} are used`,
    { block: i, call: j, gasUsed: quantity(used), gasLimit: quantity(limit) },
  );

/**
 * The client's payload with each call's gas as geth's simulator sets it (internal/ethapi/simulate.go),
 * given what the calls used in a run (`measured`): in call order, a call without gas gets what its block
 * has left (the block's gas limit, a lowered blockOverrides.gasLimit included, less the gas the block's
 * earlier calls used), at most what RPC_GAS_CAP has left over the whole simulation; a given gas is kept,
 * lowered to what the budget has left. A call that needs more than its block has left is -38015, as the
 * node answers it; an exhausted budget is -32005 naming RPC_GAS_CAP.
 */
export function gasAsTheNodeFills(
  payload: SimulatePayload,
  measured: readonly MeasuredBlock[],
  gasCap: bigint,
): SimulatePayload {
  let budget = gasCap;
  const answered = answeredBlocks(payload, measured);
  const blockStateCalls = payload.blockStateCalls.map((b, i) => {
    const limit = BigInt(answered[i]?.gasLimit ?? '0x0');
    let used = 0n;
    const calls = b.calls?.map((c, j) => {
      const left = limit - used;
      if (budget <= 0n)
        throw tooBig(`the gas used before blockStateCalls[${i}].calls[${j}]`, gasCap - budget, gasCap, 'RPC_GAS_CAP');
      if (c.gas === undefined && left <= 0n) throw blockFull(i, j, used, 1n, limit);
      if (c.gas !== undefined && BigInt(c.gas) > left) throw blockFull(i, j, used, BigInt(c.gas), limit);
      const gas = min(c.gas === undefined ? left : BigInt(c.gas), budget);
      const spent = BigInt(answered[i]?.calls[j]?.gasUsed ?? quantity(gas));
      used += spent;
      budget -= spent;
      return c.gas !== undefined && BigInt(c.gas) === gas ? c : { ...c, gas: quantity(gas) };
    });
    return calls ? { ...b, calls } : b;
  });
  return { ...payload, blockStateCalls };
}

/**
 * eth_simulateV1: bounded (boundSimulation), run through the pool's compute gate (all runs together within
 * RPC_EVM_TIMEOUT_MS of the call's arrival, RPC_EVM_MAX_CONCURRENT slots, the time of every run charged in rate units),
 * then run again with each call's gas as the node fills it (gasAsTheNodeFills, from what the calls used) until the gas
 * sent is the gas the node would have set: one run when every call gives its gas and fits, two when calls without
 * gas used less than their first share (the usual case), at most MAX_PASSES. The last run is answered as
 * the node wrote it. anvil 1.7.1 fills nothing itself (an omitted gas is 0x0 in its transactions, and it
 * runs past the block gas limit), so what it is sent decides the simulated blocks' hashes and roots.
 */
export default defineMethod('eth_simulateV1', async (ctx, [payload, block], call) => {
  const gasCap = ctx.config.evm.gasCap;
  let sent = boundSimulation(payload, { ...ctx.config.simulate, gasCap });
  // One time budget for every run: RPC_EVM_TIMEOUT_MS counts from the call's arrival, not from each run.
  const arrived = performance.now();
  for (let pass = 1; ; pass++) {
    const raw = await ctx.upstream.compute('eth_simulateV1', [sent, block ?? 'latest'], {
      budget: call.budget,
      arrived,
    });
    const measured = raw.value;
    if (!Array.isArray(measured)) return raw as RawJson<MethodResult<'eth_simulateV1'>>;
    const next = gasAsTheNodeFills(payload, measured as MeasuredBlock[], gasCap);
    if (pass === MAX_PASSES || JSON.stringify(next) === JSON.stringify(sent))
      return raw as RawJson<MethodResult<'eth_simulateV1'>>;
    sent = next;
  }
});
