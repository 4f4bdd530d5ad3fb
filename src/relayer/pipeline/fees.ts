import type { DirectionContext } from './context.js';

export interface FeeEstimate {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  /** maxFeePerGas before the cap: compared with MAX_FEE_PER_GAS_CAP when the cap is enforced. */
  uncappedMaxFeePerGas: bigint;
}

const FEE_HISTORY_BLOCKS = 4;

/**
 * EIP-1559 fees from eth_feeHistory: tip = mean of the GAS_ESTIMATION_PERCENTILE rewards of the last
 * blocks, maxFeePerGas = 2 × next base fee + tip (room for two full blocks of base-fee growth), never
 * above MAX_FEE_PER_GAS_CAP.
 */
export async function estimateFees(ctx: Pick<DirectionContext, 'destination' | 'config'>): Promise<FeeEstimate> {
  const { gasEstimationPercentile, maxFeePerGasCap } = ctx.config.claiming;
  const history = (await ctx.destination.provider.send('eth_feeHistory', [
    `0x${FEE_HISTORY_BLOCKS.toString(16)}`,
    'latest',
    [gasEstimationPercentile],
  ])) as { baseFeePerGas: string[]; reward?: string[][] };
  const baseFee = BigInt(history.baseFeePerGas.at(-1) ?? '0x0');
  const rewards = (history.reward ?? []).map((r) => BigInt(r[0] ?? '0x0'));
  const tip = rewards.length > 0 ? rewards.reduce((a, b) => a + b, 0n) / BigInt(rewards.length) : 0n;
  return cappedFees(baseFee * 2n + tip, tip, maxFeePerGasCap);
}

/** The fees of a claim whose max fee per gas would be `uncapped`: at most `cap`, the tip at most the max fee. */
export function cappedFees(uncapped: bigint, tip: bigint, cap: bigint): FeeEstimate {
  const maxFeePerGas = uncapped > cap ? cap : uncapped;
  return {
    maxFeePerGas,
    maxPriorityFeePerGas: tip > maxFeePerGas ? maxFeePerGas : tip,
    uncappedMaxFeePerGas: uncapped,
  };
}

/** "1.25" → 125n / 100n: PROFIT_MARGIN as an exact fraction. */
export function decimalFraction(value: string): { numerator: bigint; denominator: bigint } {
  const [int, frac = ''] = value.split('.');
  return { numerator: BigInt(`${int}${frac}`), denominator: 10n ** BigInt(frac.length) };
}

/** fee ≥ gas × maxFeePerGas × margin, exactly. */
export function coversCost(fee: bigint, gas: bigint, maxFeePerGas: bigint, margin: string): boolean {
  const { numerator, denominator } = decimalFraction(margin);
  return fee * denominator >= gas * maxFeePerGas * numerator;
}
