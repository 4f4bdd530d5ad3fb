/**
 * Exact decimal formatting of on-chain integers: `raw / 10^decimals` as a string with no sign, exponent
 * or trailing fractional zeros (the spec's DecimalString). Only bigint arithmetic, never a float.
 */
export function formatDecimal(raw: bigint, decimals: number): string {
  if (raw < 0n) throw new RangeError('formatDecimal: negative value');
  if (decimals === 0) return raw.toString();
  const base = 10n ** BigInt(decimals);
  const whole = raw / base;
  const fraction = (raw % base).toString().padStart(decimals, '0').replace(/0+$/, '');
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`;
}

/** A float approximation of `raw / 10^decimals`, for USD arithmetic only (prices, liquidity, fdv). */
export function toFloat(raw: bigint, decimals: number): number {
  return Number(formatDecimal(raw < 0n ? -raw : raw, decimals)) * (raw < 0n ? -1 : 1);
}
