/**
 * Poseidon2 over KoalaBear (p = 2^31 − 2^24 + 1) with a 16-element state, as Linea's state tree uses it
 * (linea-monorepo `contracts/src/libraries/Poseidon2.sol`): x ↦ x³ S-box, an external MDS before the first
 * round, 3 full rounds, 21 partial rounds, 3 full rounds.
 *
 * The hash is Merkle–Damgård over 32-byte blocks, each read as 8 big-endian 32-bit limbs: h₀ = 0 (8 limbs);
 * for every block m, (a, b) = permute(h, m) and h = b + m (limb-wise, mod p). The output is h as 32 bytes.
 * Input must be a non-empty multiple of 32 bytes.
 *
 * Arithmetic stays on doubles holding values below p (< 2^31): a product is reduced with a floating quotient
 * and the exact low 32 bits from Math.imul, so the hot path never allocates or touches BigInt.
 */

export const KOALABEAR_P = 2130706433;
const P = KOALABEAR_P;
const INV_P = 1 / P;

/** a·b mod p for 0 ≤ a, b < p. */
export function mulMod(a: number, b: number): number {
  const q = Math.floor(a * b * INV_P);
  // The true remainder is within a few units of [0, p), so its low 32 bits (as int32) are exact.
  let r = (Math.imul(a, b) - Math.imul(q, P)) | 0;
  if (r < 0) r += P;
  else if (r >= P) r -= P;
  return r;
}

/**
 * x mod p for an integer 0 ≤ x < 2^40 (sums of a few lanes): a floating quotient instead of `%`, which on
 * doubles is a slow fmod. The quotient can come out one low only when x is a multiple of p, hence the test.
 */
function reduce(x: number): number {
  const r = x - Math.floor(x * INV_P) * P;
  return r >= P ? r - P : r;
}

const add = (a: number, b: number): number => {
  const s = a + b;
  return s >= P ? s - P : s;
};

/** Splits a 256-bit constant into 8 big-endian 32-bit limbs. */
function limbs(x: bigint): number[] {
  const out: number[] = [];
  for (let i = 7; i >= 0; i--) out.push(Number((x >> BigInt(32 * i)) & 0xffffffffn));
  return out;
}

// Round constants of the full rounds: 16 per round, as two packed 256-bit words (first and second half).
const FULL_KEYS: number[][] = [
  [
    52691802021506155758914962750280372212207119203515444126415105344946620971042n,
    32207471970256316655474490955553459742787419335289228299095903266455798739660n,
  ],
  [
    22163791677048831312463448776400028385347383911100916908889018061663075177430n,
    52176870515245694198691020358647906763460864198395806999480367588806463375956n,
  ],
  [
    20057732892593326318373784289292844513497509146673516636435948826170767804894n,
    18178750968836063378915279115560606579387492034215281114134869585318875352069n,
  ],
  [
    7748602703960850726417234176553190502144764796409545305676706613632081374108n,
    14236178139181542176197168604443439317755831764127965411495610808590768539130n,
  ],
  [
    4390545490380878999875851257118004037103299792992754784803412502652715488373n,
    15895992674755709583772916119416271803214403026810424648839392700430632374893n,
  ],
  [
    37373517675827041221658956101645979913006475784844873469590649853964048342988n,
    46010512812451809471058691124553676654818408969360806522307687423952321374687n,
  ],
].map(([hi, lo]) => [...limbs(hi!), ...limbs(lo!)]);

// Round constants of the 21 partial rounds (first element only).
const PARTIAL_KEYS = [
  271263440, 648183298, 1662653166, 1984135584, 594964655, 108023522, 849546096, 1961993938, 1546336947, 1036613726,
  452088758, 275827416, 763236035, 1068717067, 1580958419, 1376393748, 892777736, 1345121022, 908739241, 908871000,
  1053550888,
];

// Diagonal of the internal matrix (all-ones plus this diagonal):
// [−2, 1, 2, 1/2, 3, 4, −1/2, −3, −4, 1/2^8, 1/8, 1/2^24, −1/2^8, −1/8, −1/16, −1/2^24] in the field.
const DIAG = Float64Array.of(
  P - 2,
  1,
  2,
  1065353217,
  3,
  4,
  1065353216,
  P - 3,
  P - 4,
  2122383361,
  1864368129,
  2130706306,
  8323072,
  266338304,
  133169152,
  127,
);

export const FULL_ROUNDS_EACH_SIDE = 3;
export const PARTIAL_ROUNDS = PARTIAL_KEYS.length;

/**
 * circ(2·M4, M4, M4, M4) with M4 = [[2,3,1,1],[1,2,3,1],[1,1,2,3],[3,1,1,2]]. Sums stay unreduced (below
 * 2^37) until the one reduction per element at the end.
 */
function external(s: Float64Array): void {
  for (let k = 0; k < 16; k += 4) {
    const a = s[k]!,
      b = s[k + 1]!,
      c = s[k + 2]!,
      d = s[k + 3]!;
    const t01 = a + b,
      t23 = c + d,
      t0123 = t01 + t23;
    const t01123 = t0123 + b,
      t01233 = t0123 + d;
    s[k] = t01 + t01123;
    s[k + 1] = c + c + t01123;
    s[k + 2] = t23 + t01233;
    s[k + 3] = a + a + t01233;
  }
  for (let j = 0; j < 4; j++) {
    const t = s[j]! + s[j + 4]! + s[j + 8]! + s[j + 12]!;
    for (let k = j; k < 16; k += 4) s[k] = reduce(s[k]! + t);
  }
}

/** Like `external`, the sum of the lanes (below 2^35) is only reduced with each product. */
function internal(s: Float64Array): void {
  let sum = 0;
  for (let i = 0; i < 16; i++) sum += s[i]!;
  for (let i = 0; i < 16; i++) s[i] = reduce(sum + mulMod(s[i]!, DIAG[i]!));
}

const cube = (x: number): number => mulMod(x, mulMod(x, x));

function fullRound(s: Float64Array, keys: number[]): void {
  for (let i = 0; i < 16; i++) s[i] = cube(add(s[i]!, keys[i]!));
  external(s);
}

/** The Poseidon2 permutation, in place, on 16 reduced field elements. */
export function permute(s: Float64Array): void {
  external(s);
  for (let r = 0; r < FULL_ROUNDS_EACH_SIDE; r++) fullRound(s, FULL_KEYS[r]!);
  for (let r = 0; r < PARTIAL_ROUNDS; r++) {
    s[0] = cube(add(s[0]!, PARTIAL_KEYS[r]!));
    internal(s);
  }
  for (let r = FULL_ROUNDS_EACH_SIDE; r < 2 * FULL_ROUNDS_EACH_SIDE; r++) fullRound(s, FULL_KEYS[r]!);
}

const state = new Float64Array(16);
const block = new Float64Array(8);

/** Linea's Poseidon2 hash of a non-empty multiple of 32 bytes; 32 bytes out (8 limbs, each < p). */
export function poseidon2(data: Uint8Array): Uint8Array {
  if (data.length === 0 || data.length % 32 !== 0)
    throw new Error(`Poseidon2 hashes a non-empty multiple of 32 bytes, got ${data.length}`);
  const h = new Float64Array(8);
  for (let off = 0; off < data.length; off += 32) {
    for (let i = 0; i < 8; i++) {
      const o = off + 4 * i;
      block[i] = ((data[o]! << 24) | (data[o + 1]! << 16) | (data[o + 2]! << 8) | data[o + 3]!) >>> 0;
      state[i] = h[i]!;
      state[i + 8] = reduce(block[i]!);
    }
    permute(state);
    for (let i = 0; i < 8; i++) h[i] = reduce(state[i + 8]! + block[i]!);
  }
  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    const v = h[i]!;
    out[4 * i] = v >>> 24;
    out[4 * i + 1] = (v >>> 16) & 0xff;
    out[4 * i + 2] = (v >>> 8) & 0xff;
    out[4 * i + 3] = v & 0xff;
  }
  return out;
}
