import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from '../../src/state/bytes.js';
import { KOALABEAR_P, mulMod, poseidon2 } from '../../src/state/poseidon2.js';

/** Linea's published vectors (test/fixtures/linea-poseidon2/SOURCE.md names the files and commits). */
const dir = new URL('../fixtures/linea-poseidon2/', import.meta.url);
const json = <T>(name: string): T => JSON.parse(readFileSync(new URL(name, dir), 'utf8')) as T;

/** test_vector_poseidon2.txt: blocks of "input", "output" headers then `[0x.., ...]` byte lists, separated by "--". */
function textVectors(): { input: Uint8Array; output: string }[] {
  const lists = readFileSync(new URL('test_vector_poseidon2.txt', dir), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('['));
  const out: { input: Uint8Array; output: string }[] = [];
  const bytes = (l: string): Uint8Array =>
    Uint8Array.from(
      l
        .slice(1, -1)
        .split(',')
        .map((b) => parseInt(b, 16)),
    );
  for (let i = 0; i + 1 < lists.length; i += 2)
    out.push({ input: bytes(lists[i]!), output: toHex(bytes(lists[i + 1]!)) });
  return out;
}

describe('Poseidon2 over KoalaBear (Linea)', () => {
  it('behavior: matches every published hash vector', () => {
    const vectors = [
      ...json<{ in: string; out: string }[]>('poseidon2-test-data.json').map((v) => ({
        input: fromHex(v.in),
        output: v.out,
      })),
      ...textVectors(),
    ];
    let passed = 0;
    for (const v of vectors) {
      expect(toHex(poseidon2(v.input)), `input of ${v.input.length} bytes`).toBe(v.output);
      passed++;
    }
    console.log(`Poseidon2: ${passed}/${vectors.length} published hash vectors match`);
    expect(passed).toBe(33);
  });

  it('behavior: field multiplication agrees with BigInt on edge and random operands', () => {
    const p = BigInt(KOALABEAR_P);
    const edge = [0, 1, 2, 65535, 65536, 2 ** 24, KOALABEAR_P - 2, KOALABEAR_P - 1, 2 ** 30, 1065353217];
    let seed = 12345;
    const rnd = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % KOALABEAR_P;
    const pairs: [number, number][] = [];
    for (const a of edge) for (const b of edge) pairs.push([a, b]);
    for (let i = 0; i < 20000; i++) pairs.push([rnd(), rnd()]);
    for (const [a, b] of pairs) expect(mulMod(a, b), `${a}·${b}`).toBe(Number((BigInt(a) * BigInt(b)) % p));
  });

  it("behavior: input limbs are taken mod p (p and 2p hash as 0), as Linea's contract reduces them", () => {
    const limbs = (words: number[]): Uint8Array => {
      const b = new Uint8Array(32);
      words.forEach((w, i) => new DataView(b.buffer).setUint32(4 * i, w));
      return b;
    };
    const zero = toHex(poseidon2(new Uint8Array(64)));
    expect(
      toHex(
        poseidon2(
          new Uint8Array([
            ...limbs([KOALABEAR_P, 2 * KOALABEAR_P, 0, 0, 0, 0, 0, KOALABEAR_P]),
            ...limbs([0, 0, 0, 2 * KOALABEAR_P]),
          ]),
        ),
      ),
    ).toBe(zero);
    expect(toHex(poseidon2(limbs([KOALABEAR_P + 5])))).toBe(toHex(poseidon2(limbs([5]))));
  });

  it('error: refuses input that is empty or not a multiple of 32 bytes', () => {
    expect(() => poseidon2(new Uint8Array(0))).toThrow('Poseidon2 hashes a non-empty multiple of 32 bytes, got 0');
    expect(() => poseidon2(new Uint8Array(33))).toThrow('got 33');
  });
});
