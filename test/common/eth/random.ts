/**
 * A seeded generator for the randomized encoder tests: a failure names its seed and case, and the same
 * seed gives the same values again (TEST_SEED=<n> replays a run).
 */
export interface Random {
  readonly seed: number;
  int(below: number): number;
  bytes(n: number): Uint8Array;
  hex(n: number): string;
  /**
   * An unsigned integer of 0 to `maxBits` bits, biased towards the edges RLP and ABI care about (0, 1 byte, full
   * width).
   */
  uint(maxBits: number): bigint;
}

export function seededRandom(seed = Number(process.env.TEST_SEED ?? Math.floor(Math.random() * 2 ** 31))): Random {
  // mulberry32
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const int = (below: number) => Math.floor(next() * below);
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => int(256));
  const hex = (n: number) => `0x${Buffer.from(bytes(n)).toString('hex')}`;
  const uint = (maxBits: number): bigint => {
    const pick = int(6);
    if (pick === 0) return 0n;
    if (pick === 1) return BigInt(int(0x80));
    if (pick === 2) return (1n << BigInt(maxBits)) - 1n;
    const bits = 1 + int(maxBits);
    let v = 0n;
    for (let i = 0; i < bits; i += 8) v = (v << 8n) | BigInt(int(256));
    return v & ((1n << BigInt(bits)) - 1n);
  };
  return { seed, int, bytes, hex, uint };
}
