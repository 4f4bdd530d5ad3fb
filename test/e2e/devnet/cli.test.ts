import { describe, expect, inject, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newMarker, processesWithMarker } from '../../helpers/processes.js';
import { waitFor } from '../../helpers/chain.js';
import { JsonRpcProvider, Wallet } from 'ethers';
import {
  L1MessageService__factory,
  Poseidon2SparseMerkleProofVerifier__factory,
  SparseMerkleProofVerifier__factory,
} from '../../../generated/contracts/types/index.js';
import { loadStateConfig } from '../../../src/state/config.js';
import { hashProviderOf } from '../../../src/state/state-hash.js';
import { verifyStateProof, type InclusionProofJson, type StateProofResultJson } from '../../../src/state/verify.js';
import type { DevnetState } from '../../../src/devnet/state-file.js';
import { l2stackArgs } from '../../helpers/l2stack.js';

const stateFile = inject('devnetStateFile');
const cli = (...args: string[]) =>
  spawnSync(process.execPath, l2stackArgs(...args), { encoding: 'utf8', timeout: 60_000 });

const occupy = () =>
  new Promise<{ server: Server; port: number }>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () =>
      resolve({ server, port: (server.address() as { port: number }).port }),
    );
  });

describe('l2stack devnet send-message', () => {
  it('behavior: sends a message and prints its hash', () => {
    const r = cli(
      'devnet',
      'send-message',
      '--from',
      'l2',
      '--account',
      '11',
      '--value',
      '0.001',
      '--fee',
      '0',
      '--state-file',
      stateFile,
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it('error: a bad address exits 2 naming --to', () => {
    const r = cli('devnet', 'send-message', '--from', 'l1', '--to', '0xnothex', '--state-file', stateFile);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--to must be a 0x-prefixed 20-byte address, got "0xnothex"');
  });

  it('error: a negative value exits 2 naming --value', () => {
    const r = cli('devnet', 'send-message', '--from', 'l1', '--value=-1', '--state-file', stateFile);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--value must be a non-negative amount of ether');
  });

  it('error: a missing --from names the flag', () => {
    const r = cli('devnet', 'send-message', '--state-file', stateFile);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--from must be l1 or l2');
  });
});

describe('l2stack devnet / dev start-up', () => {
  it('error: a port already in use fails start-up naming the port, leaving nothing running', async () => {
    const { server, port } = await occupy();
    const marker = newMarker();
    try {
      const r = spawnSync(
        process.execPath,
        l2stackArgs(
          'devnet',
          '--l2-port',
          String(port),
          '--state-file',
          join(mkdtempSync(join(tmpdir(), 'l2s-')), 's.json'),
        ),
        {
          encoding: 'utf8',
          timeout: 120_000,
          env: { ...process.env, [marker.name]: marker.value, LOG_LEVEL: 'error', DATABASE_HOST: '' },
        },
      );
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`port ${port} on 127.0.0.1 is already in use`);
      expect(processesWithMarker(marker)).toEqual([]);
    } finally {
      server.close();
    }
  });

  it('behavior: `l2stack dev` reaches ready, serves the chains and services, and Ctrl-C stops everything with exit 0', async () => {
    const marker = newMarker();
    const file = join(mkdtempSync(join(tmpdir(), 'l2s-dev-')), 'devnet.json');
    // A short history keeps the state manager's initial backfill (which gates finalization) brief.
    const child = spawn(process.execPath, l2stackArgs('dev', '--state-file', file, '--history-hours', '3'), {
      env: {
        ...process.env,
        [marker.name]: marker.value,
        LOG_LEVEL: 'info',
        DATABASE_HOST: '',
        TOKEN_API_PORT: '0',
        RPC_PORT: '0',
        API_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await new Promise<void>((resolve, reject) => {
        const deadline = Date.now() + 360_000;
        const timer = setInterval(() => {
          if (Date.now() > deadline) {
            clearInterval(timer);
            reject(new Error('l2stack dev did not print "l2stack dev ready" within 360 s'));
          }
          if (out.includes('l2stack dev ready')) {
            clearInterval(timer);
            resolve();
          }
        }, 100);
        void exited.then((code) => {
          clearInterval(timer);
          reject(new Error(`l2stack dev exited with ${code} before ready:\n${out}`));
        });
      });
      const state = JSON.parse(readFileSync(file, 'utf8')) as DevnetState;
      // The public endpoint fronts L2 when the RPC service runs.
      expect(state.l2.rpcUrl).toBe(state.services.rpc);
      for (const url of [state.l1.rpcUrl, state.l2.rpcUrl, state.l2.upstreamRpcUrl]) {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
        });
        expect(((await res.json()) as { result: string }).result).toMatch(/^0x[0-9a-f]+$/);
      }
      expect(out).toContain('Try:');
      expect(processesWithMarker(marker).length).toBeGreaterThanOrEqual(3); // node + two anvil chains

      expect(state.services.tokenApi).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${state.services.tokenApi}/health/live`)).status).toBe(200);

      // The whole loop: a message sent on L1 is anchored by the coordinator and claimed by the relayer.
      const sent = cli(
        'devnet',
        'send-message',
        '--from',
        'l1',
        '--value',
        '0.001',
        '--fee',
        '0.0001',
        '--state-file',
        file,
      );
      expect(sent.status, sent.stderr).toBe(0);
      const hash = sent.stdout.trim();
      const status = await waitFor(
        'the relayer to claim the message',
        async () => {
          const res = await fetch(`${state.services.relayerApi}/messages/${hash}?direction=L1_TO_L2`);
          if (!res.ok) return undefined;
          const body = (await res.json()) as { status: string };
          return ['CLAIMED_SUCCESS', 'CLAIMED_REVERTED', 'NON_EXECUTABLE', 'ZERO_FEE', 'FEE_UNDERPRICED'].includes(
            body.status,
          )
            ? body.status
            : undefined;
        },
        150_000,
      );
      expect(status).toBe('CLAIMED_SUCCESS');

      // svc_getProof through the public endpoint verifies against the state root the coordinator stored on L1.
      const l1Provider = new JsonRpcProvider(state.l1.rpcUrl, undefined, { staticNetwork: true });
      const l1 = L1MessageService__factory.connect(state.l1.messageService, l1Provider);
      const finalized = await waitFor(
        'a finalization carrying the state manager root',
        async () => {
          const n = await l1.currentL2BlockNumber();
          return n > 0n ? n : undefined;
        },
        180_000,
      );
      // The state manager learns of a finalization by polling L1, so for a moment after the test sees it the
      // endpoint still answers -32000 "not finalized"; that answer is retryable, any other is a failure.
      const proof = await waitFor(
        'svc_getProof to serve the finalized block',
        async () => {
          const res = await fetch(state.services.rpc!, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'svc_getProof',
              params: [state.accounts[4]!.address, [], `0x${finalized.toString(16)}`],
            }),
          });
          const body = (await res.json()) as {
            result?: StateProofResultJson;
            error?: { code: number; message: string };
          };
          if (body.error?.code === -32000) return undefined;
          if (!body.result) throw new Error(`svc_getProof failed: ${JSON.stringify(body.error)}`);
          return body.result;
        },
        30_000,
      );
      // In the format STATE_HASH says (the devnet's state manager reads it from the same environment).
      const stateHash = loadStateConfig({
        ...process.env,
        STATE_L2_RPC_URL: 'http://x',
        STATE_L1_RPC_URL: 'http://x',
        STATE_L1_MESSAGE_SERVICE: state.l1.messageService,
      }).hash;
      const verified = verifyStateProof(await l1.stateRootHashes(finalized), proof, hashProviderOf(stateHash));
      expect(verified.ok, verified.ok ? '' : verified.reason).toBe(true);
      expect(verified.ok && verified.account?.balance).toBeGreaterThan(0n);
      // And on L1, by the verifier of that format against the root the message service stored.
      const deployer = new Wallet(state.accounts[5]!.privateKey, l1Provider);
      const factory =
        stateHash === 'poseidon2'
          ? new Poseidon2SparseMerkleProofVerifier__factory(deployer)
          : new SparseMerkleProofVerifier__factory(deployer);
      const verifier = await factory.deploy();
      await verifier.waitForDeployment();
      const entry = proof.accountProof as InclusionProofJson;
      const args = [
        state.l1.messageService,
        finalized,
        entry.proof.proofRelatedNodes,
        entry.leafIndex,
        state.accounts[4]!.address,
        entry.proof.value,
      ] as const;
      expect(await verifier.verifyAccountAtFinalizedBlock(...args)).toBe(true);
      expect(
        await verifier.verifyAccountAtFinalizedBlock(
          state.l1.messageService,
          finalized,
          entry.proof.proofRelatedNodes,
          entry.leafIndex,
          state.accounts[5]!.address,
          entry.proof.value,
        ),
      ).toBe(false);
      l1Provider.destroy();

      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(processesWithMarker(marker)).toEqual([]);
    } catch (err) {
      // Whatever failed, stop the stack and show what it printed.
      child.kill('SIGINT');
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
      throw new Error(
        `${(err as Error).message}\n--- l2stack dev output (last 4000 characters) ---\n${out.slice(-4_000)}`,
        { cause: err },
      );
    }
  }, 780_000); // start-up time is measured and reported, not asserted; on a loaded 2-core machine it varies
});
