import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';

/**
 * specs/abi is the wire interface of our contracts (what the relayer, indexer and integrators call and
 * decode). The devnet contracts must implement every item of it exactly: same names, parameter names,
 * types, indexed flags, outputs and mutability.
 */
interface AbiParam { name: string; type: string; indexed?: boolean; components?: AbiParam[] }
interface AbiItem { type: string; name?: string; inputs?: AbiParam[]; outputs?: AbiParam[]; stateMutability?: string; anonymous?: boolean }

const read = <T>(url: URL) => JSON.parse(readFileSync(url, 'utf8')) as T;
const artifact = (name: string) => read<{ abi: AbiItem[] }>(new URL(`../../generated/contracts/artifacts/${name}.json`, import.meta.url)).abi;
const spec = (name: string) => read<AbiItem[]>(new URL(`../../specs/abi/${name}.json`, import.meta.url));

const param = (p: AbiParam): unknown => ({ name: p.name, type: p.type, indexed: p.indexed ?? false, components: p.components?.map(param) });
const shape = (i: AbiItem) => ({
  type: i.type, name: i.name, inputs: (i.inputs ?? []).map(param), outputs: (i.outputs ?? []).map(param),
  stateMutability: i.stateMutability, anonymous: i.anonymous ?? false,
});
const key = (i: AbiItem) => `${i.type} ${i.name ?? ''}(${(i.inputs ?? []).map((p) => p.type).join(',')})`;

/** Spec file → the compiled contracts that together must provide every item of it. */
const IMPLEMENTED_BY: Record<string, string[][]> = {
  'L1MessageService': [['L1MessageService']],
  'L2MessageService': [['L2MessageService']],
  'ERC20': [['NativeToken'], ['TestToken']],
  'DexV2': [['DexPair', 'DexFactory']],
};

describe('devnet contracts implement specs/abi', () => {
  it('behavior: every spec file is checked (DexV3 describes external pools the indexer reads)', () => {
    const files = readdirSync(new URL('../../specs/abi/', import.meta.url)).map((f) => f.replace(/\.json$/, '')).sort();
    expect(files.filter((f) => !(f in IMPLEMENTED_BY) && f !== 'DexV3')).toEqual([]);
  });

  for (const [specName, implementations] of Object.entries(IMPLEMENTED_BY)) {
    for (const contracts of implementations) {
      it(`behavior: ${contracts.join(' + ')} provide every item of ${specName}.json`, () => {
        const compiled = new Map(contracts.flatMap((c) => artifact(c)).map((i) => [key(i), i]));
        const items = spec(specName);
        expect(items.length).toBeGreaterThan(0);
        for (const item of items) {
          const found = compiled.get(key(item));
          expect(found, `${key(item)} missing from ${contracts.join(' + ')}`).toBeDefined();
          expect(shape(found!), key(item)).toEqual(shape(item));
        }
      });
    }
  }

  it('error: the comparison notices a changed parameter name', () => {
    const item = spec('L1MessageService').find((i) => i.name === 'MessageSent')!;
    const renamed = { ...item, inputs: item.inputs!.map((p, n) => (n === 0 ? { ...p, name: 'sender' } : p)) };
    expect(shape(renamed)).not.toEqual(shape(artifact('L1MessageService').find((i) => key(i) === key(item))!));
  });
});
