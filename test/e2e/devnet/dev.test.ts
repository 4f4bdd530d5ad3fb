import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';
import { JsonRpcProvider, Wallet } from 'ethers';
import WebSocket from 'ws';
import {
  L1MessageService__factory,
  Poseidon2SparseMerkleProofVerifier__factory,
  SparseMerkleProofVerifier__factory,
} from '../../../generated/contracts/types/index.js';
import { loadRpcSpec, type SpecMethod } from '../../../src/rpc/spec.js';
import type { DevnetState } from '../../../src/devnet/state-file.js';
import { loadStateConfig } from '../../../src/state/config.js';
import { hashProviderOf } from '../../../src/state/state-hash.js';
import { verifyStateProof, type InclusionProofJson, type StateProofResultJson } from '../../../src/state/verify.js';
import { spawnDev, type DevProcess } from '../dev-process.js';
import { call, type RpcReply } from '../../rpc/helpers.js';
import { runL2stack } from '../../helpers/l2stack.js';
import { within } from '../../helpers/within.js';
import { expectRuleMetricsExported } from '../ops/metrics.js';

/**
 * `l2stack dev` as a user runs it (`npm start`: devnet, bundler, state manager, every service), one process for
 * every check that needs a whole stack of its own, in this order: the spec's examples against it, the metrics of
 * the alert rules, what it serves, the whole loop (a message claimed, a proof verified on L1), and last Ctrl-C.
 * One start, not one per check: a start costs ~13 s of CPU and two cores had to carry two of them at once.
 *
 * The examples (issue 24 item 4): every example of specs/rpc.openrpc.json holds, checked by @open-rpc/test-coverage's
 * own examples rule. The rule sends each example's params in document order and accepts the answer when it equals
 * the example's result or, failing that, when it fits the method's result schema; an error is a mismatch.
 * Deterministic answers (chain id, the raw transaction's and the user operation's hashes, the gas estimate
 * of a user operation) are pinned exactly. Values that differ from run to run by design are placeholders
 * in the spec, each mapped here to this run's value before the rule runs: the hash of block 0x1 and of its
 * first transaction (the genesis is dated from the wall clock), a log filter id (random, so not guessable)
 * and a subscription id (per socket). Subscriptions run over a WebSocket, as they must; the rest over HTTP.
 */

const require = createRequire(import.meta.url);
const coverage = (require('@open-rpc/test-coverage') as { default: (o: unknown) => Promise<CoverageCall[]> }).default;
const ExamplesRule = (
  require('@open-rpc/test-coverage/build/rules/examples-rule') as { default: new (o?: unknown) => unknown }
).default;
interface Example {
  name: string;
  params: { name: string; value: unknown }[];
  result: { name: string; value: unknown };
}
type Method = SpecMethod & { examples?: Example[] };
interface CoverageCall {
  methodName: string;
  title: string;
  params: unknown[];
  result?: unknown;
  expectedResult?: unknown;
  valid?: boolean;
  reason?: string;
}

/** The example values that stand for this run's: see the spec's examples of the methods named. */
const PLACEHOLDER = {
  block1Hash: '0x0859715d163a77ad2a4c6705b0c28eac74c25bc2bb119c3196510ac9cce38bc6',
  block1FirstTransaction: '0x54a00dc206ffe4307ac1d6b89de8d1b53bc7350c940e90c6d63baf3c0d2a7b6a',
  logFilterId: '0x9f5c2a1e7b3d4c6f8a0b1c2d3e4f5a6b',
  subscriptionId: '0x9cef478923ff08bf67fde6c64013158d',
};
const SUBSCRIPTIONS = ['eth_subscribe', 'eth_unsubscribe'];
const silent = { onBegin() {}, onTestBegin() {}, onTestEnd() {}, onEnd() {} };

let dev: DevProcess | undefined;
let state: DevnetState;
let rpcUrl: string;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const result = async (method: string, params: unknown[]): Promise<any> => {
  const reply = await call(rpcUrl, method, params);
  if (reply.error) throw new Error(`${method}: ${JSON.stringify(reply.error)}`);
  return reply.result;
};

beforeAll(async () => {
  // One hour of history is enough: the examples need blocks 0x1..0x40 and a finalized state.
  dev = await spawnDev('dev');
  state = dev.state;
  rpcUrl = state.services.rpc!;
  // svc_getProof answers once the state manager's roots are finalized on L1, some seconds after ready.
  await dev.until(
    'svc_getProof on a finalized block',
    async () =>
      (await call(rpcUrl, 'svc_getProof', [state.accounts[0]!.address, [], 'finalized'])).result ? true : undefined,
    240_000,
  );
}, 600_000);

afterAll(async () => {
  await dev?.stop();
});

/** The document with each placeholder replaced by this run's value (params and results alike). */
function withValues<T>(document: T, values: Record<string, string>): T {
  let text = JSON.stringify(document);
  for (const [placeholder, value] of Object.entries(values)) text = text.split(placeholder).join(value);
  return JSON.parse(text) as T;
}

/** A JSON-RPC transport over one WebSocket: answers by id, notifications ignored. */
function socketTransport(socket: WebSocket) {
  let id = 0;
  const waiting = new Map<number, (reply: RpcReply) => void>();
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as RpcReply & { id?: number };
    if (typeof message.id === 'number') waiting.get(message.id)?.(message);
  });
  return (_url: string, method: string, params: unknown[]) =>
    new Promise<RpcReply>((resolve) => {
      waiting.set(++id, resolve);
      socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
}

const subscriptions = (methods: Method[]) => methods.find((m) => m.name === 'eth_subscribe')!.examples!;

const report = (calls: CoverageCall[]) =>
  calls.filter((c) => c.valid !== true).map((c) => `${c.methodName} (${c.title}): ${String(c.reason).slice(0, 400)}`);

describe("the spec's examples against l2stack dev (npm start)", () => {
  it(
    "behavior: test-coverage's examples rule finds 0 mismatches, over HTTP and, for subscriptions, over a WebSocket",
    { timeout: 300_000 },
    async () => {
      const { dereferenced: spec } = await loadRpcSpec();
      const dereferenced = spec as Omit<typeof spec, 'methods'> & { methods: Method[] };
      const block1 = await result('eth_getBlockByNumber', ['0x1', false]);
      expect(block1.transactions.length, 'block 0x1 holds the first deployment').toBeGreaterThan(0);
      const newFilter = dereferenced.methods.find((m) => m.name === 'eth_newFilter')!.examples![0]!;
      const values: Record<string, string> = {
        [PLACEHOLDER.block1Hash]: block1.hash,
        [PLACEHOLDER.block1FirstTransaction]: block1.transactions[0],
        [PLACEHOLDER.logFilterId]: await result(
          'eth_newFilter',
          newFilter.params.map((p) => p.value),
        ),
      };
      const url = rpcUrl;
      const http = await coverage({
        openrpcDocument: withValues({ ...dereferenced, servers: [{ name: 'l2stack dev', url }] }, values),
        transport: async (_url: string, method: string, params: unknown[]) => call(url, method, params),
        reporters: [silent],
        rules: [new ExamplesRule({ skip: SUBSCRIPTIONS })],
      });

      const socket = new WebSocket(url.replace(/^http/, 'ws'));
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      const transport = socketTransport(socket);
      const subscribe = dereferenced.methods.find((m) => m.name === 'eth_subscribe')!.examples![0]!;
      const subscription = await transport(
        url,
        'eth_subscribe',
        subscribe.params.map((p) => p.value),
      );
      const wsDocument = withValues(
        { ...dereferenced, servers: [{ name: 'l2stack dev', url }] },
        { ...values, [PLACEHOLDER.subscriptionId]: subscription.result as string },
      );
      // A resume replays every block since its point and is charged for it: the example's point is a recent
      // head, in this run the head − 2 (a point from the start of the history would exceed the rate limit).
      const head = BigInt(await result('eth_blockNumber', []));
      const recent = await result('eth_getBlockByNumber', [`0x${(head - 2n).toString(16)}`, false]);
      const resume = subscriptions(wsDocument.methods).find(
        (e) => (e.params[2]?.value as { resumeAfter?: unknown } | undefined)?.resumeAfter,
      );
      expect(resume, 'the resumed newHeads example').toBeDefined();
      (resume!.params[2]!.value as { resumeAfter: unknown }).resumeAfter = {
        blockNumber: recent.number,
        blockHash: recent.hash,
      };
      const ws = await coverage({
        openrpcDocument: wsDocument,
        transport,
        reporters: [silent],
        rules: [new ExamplesRule({ only: SUBSCRIPTIONS })],
      });
      socket.close();

      const all = [...http, ...ws];
      const exact = all.filter((c) => isDeepStrictEqual(c.result, c.expectedResult)).map((c) => c.methodName);
      console.info(
        `examples rule: ${all.length} examples (${ws.length} over a WebSocket), ${report(all).length} mismatches; ${exact.length} equal to the example, the rest matched by the result schema`,
      );
      for (const line of report(all)) console.info(`mismatch: ${line}`);
      expect(report(http)).toEqual([]);
      expect(report(ws)).toEqual([]);
      // Every method with examples was run, and the answers that do not depend on the run are the examples'.
      expect(new Set(all.map((c) => c.methodName))).toEqual(
        new Set(dereferenced.methods.filter((m) => m.examples?.length).map((m) => m.name)),
      );
      expect(exact).toEqual(
        expect.arrayContaining([
          'eth_chainId',
          'net_version',
          'eth_sendRawTransaction',
          'eth_sendUserOperation',
          'eth_supportedEntryPoints',
          'eth_uninstallFilter',
          'eth_unsubscribe',
        ]),
      );
    },
  );
});

describe('the metrics of the alert rules and dashboards against l2stack dev', () => {
  it('behavior: every metric named in a rule or a dashboard panel is exported by the running services', async () => {
    const s = state.services;
    await expectRuleMetricsExported({ relayer: s.relayerApi, rpc: s.rpc, 'token-api': s.tokenApi });
  });
});

describe('l2stack dev: what it serves, the whole loop, Ctrl-C', () => {
  it('behavior: it serves both chains, the node behind the endpoint and the services, and says what to try', async () => {
    // The public endpoint fronts L2 when the RPC service runs.
    expect(state.l2.rpcUrl).toBe(state.services.rpc);
    for (const url of [state.l1.rpcUrl, state.l2.rpcUrl, state.l2.upstreamRpcUrl]) {
      const reply = await call(url, 'eth_blockNumber', []);
      expect(reply.result, url).toMatch(/^0x[0-9a-f]+$/);
    }
    expect(dev!.output()).toContain('Try:');
    expect(dev!.processes().length).toBeGreaterThanOrEqual(3); // node + two anvil chains
    expect(state.services.tokenApi).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${state.services.tokenApi}/health/live`)).status).toBe(200);
  });

  it('behavior: a message sent on L1 is anchored and claimed; svc_getProof verifies against the root stored on L1, off-chain and by the verifier contract', async () => {
    const sent = runL2stack([
      'devnet',
      'send-message',
      '--from',
      'l1',
      '--value',
      '0.001',
      '--fee',
      '0.0001',
      '--state-file',
      dev!.stateFile,
    ]);
    expect(sent.status, sent.stderr).toBe(0);
    const hash = sent.stdout.trim();
    const status = await dev!.until(
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
    const l1Provider = new JsonRpcProvider(state.l1.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
    try {
      const l1 = L1MessageService__factory.connect(state.l1.messageService, l1Provider);
      const finalized = await dev!.until(
        'a finalization carrying the state manager root',
        async () => {
          const n = await l1.currentL2BlockNumber();
          return n > 0n ? n : undefined;
        },
        180_000,
      );
      // The state manager learns of a finalization by polling L1, so for a moment after the test sees it the
      // endpoint still answers -32000 "not finalized"; that answer is retryable, any other is a failure.
      const proof = await dev!.until(
        'svc_getProof to serve the finalized block',
        async () => {
          const reply = await call(state.services.rpc!, 'svc_getProof', [
            state.accounts[4]!.address,
            [],
            `0x${finalized.toString(16)}`,
          ]);
          if (reply.error?.code === -32000) return undefined;
          if (!reply.result) throw new Error(`svc_getProof failed: ${JSON.stringify(reply.error)}`);
          return reply.result as StateProofResultJson;
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
      await within('the verifier contract to be deployed', 60_000, verifier.waitForDeployment());
      const entry = proof.accountProof as InclusionProofJson;
      const at = (account: string) =>
        verifier.verifyAccountAtFinalizedBlock(
          state.l1.messageService,
          finalized,
          entry.proof.proofRelatedNodes,
          entry.leafIndex,
          account,
          entry.proof.value,
        );
      expect(await at(state.accounts[4]!.address)).toBe(true);
      expect(await at(state.accounts[5]!.address)).toBe(false);
    } finally {
      l1Provider.destroy();
    }
  });

  it('behavior: Ctrl-C stops everything it started with exit 0', async () => {
    expect(await dev!.interrupt(60_000)).toBe(0);
    expect(dev!.processes()).toEqual([]);
  });
});
