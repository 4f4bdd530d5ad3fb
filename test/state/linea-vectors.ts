import { readFileSync } from 'node:fs';
import type { InclusionProofJson } from '../../src/state/verify.js';

/** Linea's published state-tree vectors (test/fixtures/linea-poseidon2/SOURCE.md names the files and commits). */
const dir = new URL('../fixtures/linea-poseidon2/', import.meta.url);
export const lineaJson = <T>(name: string): T => JSON.parse(readFileSync(new URL(name, dir), 'utf8')) as T;

export interface LineaProofData {
  accountProof: InclusionProofJson;
  storageProofs: InclusionProofJson[];
}
export const lineaProofs = (): LineaProofData => lineaJson<LineaProofData>('merkle-proof-data-poseidon2.json');
export const lineaRoots = (): Record<
  'STATE_ROOT' | 'STORAGE_ROOT' | 'ACCOUNT_KEY_HASH' | 'ACCOUNT_VALUE_HASH' | 'STORAGE_KEY_HASH' | 'STORAGE_VALUE_HASH',
  string
> => lineaJson('roots.json');
export const lineaAccountKeys = (): { input: string; output: string }[] => lineaJson('account-key-test-vectors.json');

/** One byte of a hex string altered (XOR 0x01 at byte `i`). */
export function alterByte(hex: string, i: number): string {
  const at = 2 + 2 * i;
  const b = (parseInt(hex.slice(at, at + 2), 16) ^ 0x01).toString(16).padStart(2, '0');
  return hex.slice(0, at) + b + hex.slice(at + 2);
}

/** Byte positions to alter in an entry of `n` bytes: every byte of short entries, else first, middle and last. */
export const positions = (n: number): number[] =>
  n <= 32 ? Array.from({ length: n }, (_, i) => i) : [0, 1, Math.floor(n / 2), n - 2, n - 1];

/** Every proof with one byte altered: in each node (some positions), and in every byte of the value. */
export function alteredProofs(p: InclusionProofJson): { what: string; proof: InclusionProofJson }[] {
  const out: { what: string; proof: InclusionProofJson }[] = [];
  const nodes = p.proof.proofRelatedNodes;
  for (const [n, node] of nodes.entries()) {
    for (const i of positions((node.length - 2) / 2)) {
      const altered = nodes.map((x, j) => (j === n ? alterByte(x, i) : x));
      out.push({ what: `node ${n} byte ${i}`, proof: { ...p, proof: { ...p.proof, proofRelatedNodes: altered } } });
    }
  }
  const valueBytes = (p.proof.value.length - 2) / 2;
  for (let i = 0; i < valueBytes; i++)
    out.push({ what: `value byte ${i}`, proof: { ...p, proof: { ...p.proof, value: alterByte(p.proof.value, i) } } });
  return out;
}
