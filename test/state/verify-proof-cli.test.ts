import { describe, expect, it, beforeAll } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../../src/cli/command.js';
import { verifyProof } from '../../src/cli/verify-proof.js';
import { toHex, word } from '../../src/state/bytes.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { WorldState, type StateProofJson } from '../../src/state/state.js';
import { startAnvil } from '../../src/devnet/anvil.js';
import { lineaRoots } from './linea-vectors.js';
import { DEFAULT_STATE_HASH } from '../../src/state/config.js';
import { hashProviderOf } from '../../src/state/state-hash.js';
import { l2stackArgs, runL2stack } from '../helpers/l2stack.js';

const spawn = (input: string, ...args: string[]) => runL2stack(['verify-proof', ...args], { input });
const A = '0x00000000000000000000000000000000000000a1';

let root: string;
let result: StateProofJson;

/** The command's logic in-process (spawning the CLI costs seconds per run; two runs below cover the process). */
function run(input: string, rootArg: unknown, hash?: string): { code: number; stdout: string; stderr: string } {
  let stdout = '';
  let stderr = '';
  const code = verifyProof(
    rootArg,
    input,
    (l) => void (stdout += l),
    (l) => void (stderr += l),
    hash,
  );
  return { code, stdout, stderr };
}

beforeAll(async () => {
  // In the default format (STATE_HASH's default), which the command assumes without --hash.
  const world = new WorldState(new MemoryStore(), hashProviderOf(DEFAULT_STATE_HASH));
  root = await world.applyBlock({ number: 0n, hash: '0x0', parentHash: '0x' }, [
    { address: A, deleted: false, nonce: 1n, balance: 99n, storage: new Map([[toHex(word(1)), word(5)]]) },
  ]);
  result = await world.getProof(A, [toHex(word(1)), toHex(word(2))], 0n);
});

describe('l2stack verify-proof', () => {
  it('behavior: exits 0 when every proof verifies (bare result or whole JSON-RPC response)', () => {
    const r = spawn(JSON.stringify(result), '--root', root);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`ok: account ${A} exists (nonce 1, balance 99`);
    expect(r.stdout).toContain('2 storage proofs verified (1 present, 1 absent)');
    expect(run(JSON.stringify({ jsonrpc: '2.0', id: 1, result }), root).code).toBe(0);
  });

  it('error: exits 1 naming the first proof that does not verify', () => {
    const tampered = structuredClone(result);
    const e = tampered.storageProofs[1]!;
    if ('leftProof' in e) e.leftProof.proofRelatedNodes[20] = `0x${'00'.repeat(64)}`;
    const r = run(JSON.stringify(tampered), root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^verify-proof: storageProofs\[1\] \(0x0{63}2\) does not verify: left proof: /);
    const other = run(JSON.stringify(result), `0x${'11'.repeat(32)}`);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^verify-proof: accountProof does not verify: the root node hashes to 0x/);
    expect(run('{"accountProof": 1}', root).stderr).toContain(
      'verify-proof: result does not verify: not a svc_getProof result',
    );
  });

  it('args: a missing or malformed --root, or input that is not JSON, exits 2 with the usage', () => {
    const bad = spawn(JSON.stringify(result), '--root', '0x1234');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--root must be 0x followed by 64 hex digits');
    expect(bad.stderr).toContain('Usage: l2stack verify-proof');
    expect(() => run(JSON.stringify(result), undefined)).toThrow(new UsageError('--root is required'));
    expect(() => run('not json', root)).toThrow(/the input is not JSON/);
    expect(() =>
      verifyProof(
        root,
        JSON.stringify(result),
        () => {},
        () => {},
        'mimc',
      ),
    ).toThrow(new UsageError('--hash must be one of poseidon2, keccak, got "mimc"'));
  });

  it("behavior: --hash poseidon2 --file verifies Linea's published proof result against its state root, and not under keccak", () => {
    const file = fileURLToPath(
      new URL('../fixtures/linea-poseidon2/merkle-proof-data-poseidon2.json', import.meta.url),
    );
    const r = runL2stack(['verify-proof', '--root', lineaRoots().STATE_ROOT, '--hash', 'poseidon2', '--file', file]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(
      `ok: account 0x2f00000000000000000000000000000000000000 exists (nonce 41, balance 15353, storageRoot ${lineaRoots().STORAGE_ROOT}); 1 storage proof verified (1 present, 0 absent)`,
    );
    const text = readFileSync(file, 'utf8');
    expect(run(text, lineaRoots().STATE_ROOT, 'keccak').stderr).toMatch(
      /^verify-proof: accountProof does not verify: the root node must be 64 bytes/,
    );
  });

  it("error: --rpc to an endpoint without svc_getProof (anvil) exits 1 with the endpoint's error", async () => {
    const anvil = await startAnvil({ port: 0, chainId: 31337 });
    try {
      const args = [
        'verify-proof',
        '--root',
        root,
        '--rpc',
        anvil.url,
        '--address',
        A,
        '--keys',
        toHex(word(1)),
        '--block',
        '0x0',
      ];
      const r = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          l2stackArgs(...args),
          { encoding: 'utf8', timeout: 60_000 },
          (error, _stdout, stderr) => resolve({ status: error ? (error.code as number) : 0, stderr }),
        );
        child.stdin?.end();
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/^verify-proof: the endpoint answered an error: \{.*"code":-32601/);
    } finally {
      await anvil.stop();
    }
  });
});
