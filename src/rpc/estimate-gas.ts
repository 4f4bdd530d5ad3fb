import { deflateRawSync, constants } from 'node:zlib';
import { Signature, Transaction } from 'ethers';
import type { CallObject, GasEstimate } from '../../generated/rpc/methods.js';
import type { RpcContext } from './context.js';
import { quantity, type CallScope } from './types.js';
import { capGas, computeResult } from './evm-bounds.js';

/**
 * The compressor of svc_estimateGas: raw DEFLATE (RFC 1951) at level 9, as node:zlib's deflateRawSync produces it. It
 * stands in for the chain's data compressor, so the size follows the bytes a transaction really costs to publish.
 */
export function compressedSize(bytes: Uint8Array): number {
  return deflateRawSync(bytes, { level: constants.Z_BEST_COMPRESSION }).length;
}

/** A placeholder signature of full length (r and s 32 bytes with a high first byte, s canonical). */
const PLACEHOLDER_SIGNATURE = Signature.from({ r: `0x${'fe'.repeat(32)}`, s: `0x7f${'ff'.repeat(31)}`, yParity: 1 });

/** The call as a signed transaction of its real size (placeholder signature), RLP/typed-envelope encoded. */
export function signedSizeTransaction(
  call: CallObject,
  fields: { chainId: bigint; nonce: bigint; gasLimit: bigint; baseFee: bigint; priorityFee: bigint },
): Uint8Array {
  const legacy = call.gasPrice !== undefined;
  const tx = Transaction.from({
    type: legacy ? (call.accessList ? 1 : 0) : 2,
    chainId: fields.chainId,
    nonce: Number(fields.nonce),
    gasLimit: fields.gasLimit,
    to: call.to ?? null,
    value: call.value !== undefined ? BigInt(call.value) : 0n,
    data: call.input ?? call.data ?? '0x',
    ...(call.accessList ? { accessList: call.accessList } : {}),
    ...(legacy
      ? { gasPrice: BigInt(call.gasPrice!) }
      : {
          maxPriorityFeePerGas:
            call.maxPriorityFeePerGas !== undefined ? BigInt(call.maxPriorityFeePerGas) : fields.priorityFee,
          maxFeePerGas:
            call.maxFeePerGas !== undefined ? BigInt(call.maxFeePerGas) : fields.baseFee * 2n + fields.priorityFee,
        }),
  });
  tx.signature = PLACEHOLDER_SIGNATURE;
  return Buffer.from(tx.serialized.slice(2), 'hex');
}

/** "1.2" → 12/10, exact (no floats near wei). */
function ratio(decimal: string): [bigint, bigint] {
  const [int, frac = ''] = decimal.split('.');
  return [BigInt(`${int}${frac}`), 10n ** BigInt(frac.length)];
}

/** priorityFeePerGas = margin × (variableCost × compressedSize / gasLimit + fixedCost), rounded up. */
export function priorityFee(costs: RpcContext['config']['estimateGas'], size: number, gasLimit: bigint): bigint {
  const [num, den] = ratio(costs.margin);
  const numerator = num * (costs.variableCostWei * BigInt(size) + costs.fixedCostWei * gasLimit);
  const denominator = den * (gasLimit === 0n ? 1n : gasLimit);
  return (numerator + denominator - 1n) / denominator;
}

/**
 * The node's estimate is searched up to RPC_GAS_CAP within RPC_EVM_TIMEOUT_MS (evm-bounds.ts). Differing data and input
 * were refused before (params/rules.ts), so either names the calldata.
 */
export async function estimateGas(
  ctx: RpcContext,
  call: CallObject,
  block: string | undefined,
  scope: CallScope = {},
): Promise<GasEstimate> {
  // Every refusal of ours comes before the first node read: a refused estimate costs the node nothing.
  const bounded = capGas(call, ctx.config.evm.gasCap);
  const tag = block ?? 'latest';
  const nonce =
    call.nonce !== undefined
      ? Promise.resolve(call.nonce)
      : call.from
        ? ctx.upstream.request('eth_getTransactionCount', [call.from, 'latest'])
        : Promise.resolve('0x0');
  // All four settle before the call answers (not Promise.all's first rejection): no node request of this call outlives
  // it, so a refused estimate leaves no reads behind that the next caller would wait on.
  const settled = await Promise.allSettled([
    computeResult(ctx, 'eth_estimateGas', [bounded, tag], scope),
    ctx.upstream.request('eth_getBlockByNumber', ['latest', false]),
    ctx.upstream.request('eth_chainId', []),
    nonce,
  ]);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  const [gas, latest, chainId, nonceHex] = settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as [
    string,
    { baseFeePerGas?: string } | null,
    string,
    string,
  ];
  const gasLimit = BigInt(gas);
  const baseFee = BigInt(latest?.baseFeePerGas ?? '0x0');
  const costs = ctx.config.estimateGas;
  // The fee fields are part of the signed bytes: size them with a first estimate of the fee itself.
  const first = priorityFee(costs, 0, gasLimit);
  const bytes = signedSizeTransaction(call, {
    chainId: BigInt(chainId),
    nonce: BigInt(nonceHex),
    gasLimit,
    baseFee,
    priorityFee: first,
  });
  return {
    gasLimit: quantity(gasLimit),
    baseFeePerGas: quantity(baseFee),
    priorityFeePerGas: quantity(priorityFee(costs, compressedSize(bytes), gasLimit)),
  };
}
