import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { Interface, getAddress } from 'ethers';
import { describeRevert, l1Interface, l2Interface } from '../../src/relayer/chain.js';

/**
 * specs/abi is the wire interface of our contracts (what the relayer, indexer and integrators call and
 * decode). The devnet contracts must implement every item of it exactly: same names, parameter names,
 * types, indexed flags, outputs and mutability.
 */
interface AbiParam {
  name: string;
  type: string;
  indexed?: boolean;
  components?: AbiParam[];
}
interface AbiItem {
  type: string;
  name?: string;
  inputs?: AbiParam[];
  outputs?: AbiParam[];
  stateMutability?: string;
  anonymous?: boolean;
}

const read = <T>(url: URL) => JSON.parse(readFileSync(url, 'utf8')) as T;
const artifact = (name: string) =>
  read<{ abi: AbiItem[] }>(new URL(`../../generated/contracts/artifacts/${name}.json`, import.meta.url)).abi;
const spec = (name: string) => read<AbiItem[]>(new URL(`../../specs/abi/${name}.json`, import.meta.url));

const param = (p: AbiParam): unknown => ({
  name: p.name,
  type: p.type,
  indexed: p.indexed ?? false,
  components: p.components?.map(param),
});
const shape = (i: AbiItem) => ({
  type: i.type,
  name: i.name,
  inputs: (i.inputs ?? []).map(param),
  outputs: (i.outputs ?? []).map(param),
  stateMutability: i.stateMutability,
  anonymous: i.anonymous ?? false,
});
const key = (i: AbiItem) => `${i.type} ${i.name ?? ''}(${(i.inputs ?? []).map((p) => p.type).join(',')})`;

/** Spec file → the compiled contracts that together must provide every item of it. */
const IMPLEMENTED_BY: Record<string, string[][]> = {
  L1MessageService: [['L1MessageService']],
  L2MessageService: [['L2MessageService']],
  ERC20: [['NativeToken'], ['TestToken']],
  DexV2: [['DexPair', 'DexFactory']],
};

describe('devnet contracts implement specs/abi', () => {
  it('behavior: every spec file is checked (DexV3 and ERC1155 describe external contracts: pools the indexer reads, tokens whose transfers eth simulations sum)', () => {
    const files = readdirSync(new URL('../../specs/abi/', import.meta.url))
      .map((f) => f.replace(/\.json$/, ''))
      .sort();
    expect(files.filter((f) => !(f in IMPLEMENTED_BY) && f !== 'DexV3' && f !== 'ERC1155')).toEqual([]);
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

/**
 * specs/abi is also the only place the code's ABIs are written: codegen turns every file into
 * generated/contracts/abi (a const ABI and an ethers Interface built once), and src/ imports those.
 */
describe('src/ uses the bindings generated from specs/abi', () => {
  it('behavior: every spec file has a generated module whose ABI is the spec, item for item', async () => {
    const files = readdirSync(new URL('../../specs/abi/', import.meta.url))
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.replace(/\.json$/, ''));
    expect(files.length).toBeGreaterThan(0);
    const generated = (await import('../../generated/contracts/abi/index.js')) as Record<string, unknown>;
    for (const name of files) {
      expect(generated[`${name}Abi`], `${name}Abi`).toEqual(spec(name));
      const iface = generated[`${name}Interface`] as Interface;
      expect(iface, `${name}Interface`).toBeInstanceOf(Interface);
      expect(iface.fragments.length, name).toBe(spec(name).length);
    }
  });

  // A string literal that starts with an ABI keyword and a name followed by "(" is a human-readable
  // fragment ("function totalSupply() view returns (uint256)"); JSON items are not strings of that form.
  const FRAGMENT = /(['"`])\s*(function|event|error|constructor)\s+[A-Za-z_$][\w$]*\s*\(/;
  const sourceFiles = (dir: URL): URL[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? sourceFiles(new URL(`${e.name}/`, dir))
        : /\.(ts|js|mjs|cjs)$/.test(e.name)
          ? [new URL(e.name, dir)]
          : [],
    );

  it('behavior: no hand-written human-readable ABI fragment in src/', () => {
    const files = sourceFiles(new URL('../../src/', import.meta.url));
    expect(files.length).toBeGreaterThan(50);
    const found = files.flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, n) =>
          FRAGMENT.test(line) ? [`${f.pathname.replace(/.*\/src\//, 'src/')}:${n + 1}: ${line.trim()}`] : [],
        ),
    );
    expect(found).toEqual([]);
  });

  it('error: the fragment detector finds the forms it must refuse', () => {
    for (const line of [
      `'function totalSupply() view returns (uint256)'`,
      `"event Sync(uint112 reserve0, uint112 reserve1)"`,
      '`error InvalidMerkleProof()`',
    ]) {
      expect(FRAGMENT.test(line), line).toBe(true);
    }
    expect(FRAGMENT.test(`contract.getFunction('totalSupply')`)).toBe(false);
  });

  /**
   * The custom errors the relayer names in its logs and decisions (RateLimitExceeded is retried later),
   * by the contract that reverts with them: the claim's destination (L1 claims with proof, L2 claims anchored
   * messages). They must come from the spec, so integrators' tools decode the same revert data.
   */
  const DECODED: Record<'L1MessageService' | 'L2MessageService', string[]> = {
    L1MessageService: [
      'RateLimitExceeded()',
      'MessageAlreadyClaimed(uint256)',
      'L2MerkleRootDoesNotExist()',
      'InvalidMerkleProof()',
      'ProofLengthDifferentThanMerkleDepth(uint256,uint256)',
      'LeafIndexOutOfBounds(uint32,uint256)',
      'MessageSendingFailed(address)',
      'FeePaymentFailed(address)',
    ],
    L2MessageService: [
      'MessageDoesNotExistOrHasAlreadyBeenClaimed(bytes32)',
      'MessageSendingFailed(address)',
      'FeePaymentFailed(address)',
    ],
  };
  const relayerIface = { L1MessageService: l1Interface, L2MessageService: l2Interface };

  for (const [name, errors] of Object.entries(DECODED) as [keyof typeof DECODED, string[]][]) {
    it(`behavior: ${name}.json declares every error the relayer decodes, and the relayer names them from revert data`, () => {
      const declared = spec(name)
        .filter((i) => i.type === 'error')
        .map((i) => `${i.name}(${(i.inputs ?? []).map((p) => p.type).join(',')})`);
      for (const signature of errors) {
        expect(declared, `${signature} in specs/abi/${name}.json`).toContain(signature);
        const fragment = relayerIface[name].getError(signature)!;
        const args = fragment.inputs.map((p) =>
          p.type === 'address'
            ? getAddress(`0x${'aa'.repeat(20)}`)
            : p.type === 'bytes32'
              ? `0x${'ab'.repeat(32)}`
              : 7n,
        );
        const data = relayerIface[name].encodeErrorResult(fragment, args);
        expect(describeRevert(relayerIface[name], { data })).toBe(`${fragment.name}(${args.map(String).join(', ')})`);
      }
    });
  }

  it('behavior: the relayer decodes Error(string) reverts and names unknown selectors by their data', () => {
    const data = l1Interface.encodeErrorResult('Error', ['paused']);
    expect(describeRevert(l1Interface, { data })).toBe('Error(paused)');
    expect(describeRevert(l2Interface, { data: '0xdeadbeef' })).toBe('execution reverted with data 0xdeadbeef');
  });
});
