import type { Quantity } from '../../../generated/rpc/methods.js';
import { defineMethod, type RpcContext } from '../context.js';
import { RawJson } from '../upstream/raw-json.js';

/**
 * EIP-1559's constants on Ethereum (and anvil): the target is half the gas limit, a block moves the fee by at most 1/8.
 */
const ELASTICITY = 2n;
const CHANGE_DENOMINATOR = 8n;

const quantity = (v: unknown): bigint | undefined => {
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{1,64}$/.test(v)) return undefined;
  return BigInt(v);
};

/**
 * The base fee of the block after `header` by EIP-1559, as geth computes it (eip1559.CalcBaseFee), or
 * undefined when the header lacks a member (a pre-London block has no baseFeePerGas).
 */
export function nextBaseFee(header: Record<string, unknown>): bigint | undefined {
  const base = quantity(header.baseFeePerGas);
  const used = quantity(header.gasUsed);
  const limit = quantity(header.gasLimit);
  if (base === undefined || used === undefined || limit === undefined) return undefined;
  const target = limit / ELASTICITY;
  if (target === 0n || used === target) return base;
  if (used > target) {
    const delta = (base * (used - target)) / target / CHANGE_DENOMINATOR;
    return base + (delta > 1n ? delta : 1n);
  }
  const delta = (base * (target - used)) / target / CHANGE_DENOMINATOR;
  return base - delta;
}

/** The node's own figure: the last baseFeePerGas of eth_feeHistory is the next block's. */
async function fromNode(ctx: RpcContext): Promise<RawJson<Quantity>> {
  const history = (await ctx.upstream.request('eth_feeHistory', ['0x1', 'latest', []])) as {
    baseFeePerGas?: unknown[];
  };
  const next = history.baseFeePerGas?.at(-1);
  if (typeof next !== 'string') throw new Error('the node answered eth_feeHistory without baseFeePerGas');
  return new RawJson<Quantity>(JSON.stringify(next));
}

/**
 * eth_baseFee (execution-apis #795): computed from the head tracker's block while the head is live (no
 * node call, answered now); otherwise, or for a header without the EIP-1559 members, the node's own
 * eth_feeHistory figure. anvil 1.7.1 does not serve eth_baseFee itself (-32601).
 */
export default defineMethod('eth_baseFee', (ctx) => {
  const head = ctx.upstream.tracker.head;
  const next = head !== undefined && ctx.upstream.headIsLive ? nextBaseFee(head.header) : undefined;
  if (next !== undefined) return new RawJson<Quantity>(`"0x${next.toString(16)}"`);
  return fromNode(ctx);
});
