import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { openTestDb } from '../helpers/db.js';
import { chain, post, startTestRpc } from '../rpc/helpers.js';
import { countingNode, type CountingNode } from './counting-node.js';
import { executionApis } from './execution-apis.js';
import { loadRpcSpec } from '../../src/rpc/spec.js';
import type { Anvil } from '../../src/devnet/anvil.js';

// @open-rpc/test-coverage is CommonJS without an ESM entry: its runner and its two rules, as a user runs them.
const require = createRequire(import.meta.url);
const coverage = (require('@open-rpc/test-coverage') as { default: (o: unknown) => Promise<CoverageCall[]> }).default;
const JsonSchemaFakerRule = (
  require('@open-rpc/test-coverage/build/rules/json-schema-faker-rule') as { default: new (o?: unknown) => unknown }
).default;
// The faker draws from json-schema-faker's `random` option (randexp too): seeded, so a run is repeatable. CI runs
// the default seed; COVERAGE_SEED=<n> explores another, and a failure names the seed that reproduces it.
const jsf = require('json-schema-faker') as { option(o: { random: () => number }): void };
const SEED = Number(process.env.COVERAGE_SEED ?? 20261129) >>> 0;
const ExamplesRule = (
  require('@open-rpc/test-coverage/build/rules/examples-rule') as { default: new (o?: unknown) => unknown }
).default;

interface CoverageCall {
  methodName: string;
  params: unknown[];
  title: string;
  result?: unknown;
  error?: { code: number; message: string };
  valid?: boolean;
  reason?: string;
  requestError?: unknown;
}

let anvil: Anvil;
let node: CountingNode;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;

beforeAll(async () => {
  ({ anvil } = await chain());
  node = await countingNode(anvil.url);
  db = await openTestDb();
  // Head tracking off (one poll at start), so every node call during a coverage call comes from that call.
  rpc = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc'),
    upstreams: [node.url],
    env: { RPC_UPSTREAM_HEAD_POLL_MS: '3600000' },
  });
});

afterAll(async () => {
  await rpc?.stop();
  await node?.close();
  await anvil?.stop();
  await db?.close();
});

const silent = { onBegin() {}, onTestBegin() {}, onTestEnd() {}, onEnd() {} };

describe('@open-rpc/test-coverage against the running endpoint with our spec', () => {
  it(
    'behavior: no result fails its schema (ours, and the execution-apis for eth_), and no call the spec refuses reaches the node',
    { timeout: 120_000 },
    async () => {
      const { dereferenced } = await loadRpcSpec();
      const official = executionApis();
      // Node calls and node refusals per coverage call: the runner awaits each call before the next.
      const perCall: {
        method: string;
        params: unknown;
        code?: number;
        message?: string;
        nodeCalls: number;
        nodeRefusals: number;
        nodeStateAnswers: number;
      }[] = [];
      const transport = async (_url: string, method: string, params: unknown[]) => {
        const calls = node.calls();
        const refusals = node.refusals.length;
        const stateAnswers = node.stateAnswers.length;
        const r = await post(rpc.url, JSON.stringify({ jsonrpc: '2.0', id: perCall.length + 1, method, params }));
        const reply = JSON.parse(r.text) as { result?: unknown; error?: { code: number; message: string } };
        perCall.push({
          method,
          params,
          code: reply.error?.code,
          message: reply.error?.message,
          nodeCalls: node.calls() - calls,
          nodeRefusals: node.refusals.length - refusals,
          nodeStateAnswers: node.stateAnswers.length - stateAnswers,
        });
        return reply;
      };
      const document = { ...dereferenced, servers: [{ name: 'endpoint', url: rpc.url }] };
      // The faker rule only generates for methods without examples, so it runs on a copy without them; the
      // examples rule runs on the document as published.
      // json-schema-faker (randexp) spends ~5 s per 128 KiB Blob pattern: the faker's copy narrows Blob to one
      // valid blob (a subset of what the spec accepts, so what it sends is still valid).
      const withoutExamples = narrowBlobs({
        ...document,
        methods: dereferenced.methods.map((m) => ({ ...m, examples: [] })),
      });
      jsf.option({ random: mulberry32(SEED) });
      const faked = await coverage({
        openrpcDocument: withoutExamples,
        transport,
        reporters: [silent],
        rules: [new JsonSchemaFakerRule({ numCalls: 6 })],
      });
      const examples = await coverage({
        openrpcDocument: document,
        transport,
        reporters: [silent],
        rules: [new ExamplesRule()],
      });
      const all = [...faked, ...examples];

      const resultFailures = all
        .filter((c) => c.result !== undefined && c.valid !== true)
        .map((c) => `${c.title} ${c.methodName}: ${String(c.reason).slice(0, 300)}`);
      const officialFailures = all
        .filter((c) => c.result !== undefined && c.methodName.startsWith('eth_') && official.methods.has(c.methodName))
        .map((c) => ({ c, verdict: official.check(c.methodName, c.result) }))
        .filter(({ verdict }) => verdict.problem)
        .map(({ c, verdict }) => `${c.methodName} ${JSON.stringify(c.params).slice(0, 120)}: ${verdict.problem}`);
      // A -32602 is either ours (the spec refused: no node call) or the node's answer about its state (anvil's
      // "BlockOutOfRangeError" for a well-formed block number above its head), never the node refusing input.
      const nodeStateAnswers = perCall.filter((c) => c.code === -32602 && c.nodeStateAnswers > 0);
      const refusedByUs = perCall.filter((c) => c.code === -32602 && c.nodeStateAnswers === 0);
      const refusedButForwarded = refusedByUs
        .filter((c) => c.nodeCalls > 0)
        .map((c) => `${c.method} ${JSON.stringify(c.params).slice(0, 160)}: ${c.message}`);
      const nodeRefused = perCall
        .filter((c) => c.nodeRefusals > 0)
        .map((c) => `${c.method} ${JSON.stringify(c.params).slice(0, 160)}`);
      const requestErrors = all
        .filter((c) => c.requestError !== undefined)
        .map((c) => `${c.methodName}: ${String(c.requestError)}`);

      const results = all.filter((c) => c.result !== undefined).length;
      const refused = refusedByUs.length;
      const otherErrors = perCall.filter((c) => c.code !== undefined && c.code !== -32602);
      if (process.env.COVERAGE_DEBUG)
        for (const c of otherErrors) console.info(c.code, c.method, c.message?.slice(0, 160));
      const byCode = new Map<number, number>();
      for (const c of otherErrors) byCode.set(c.code!, (byCode.get(c.code!) ?? 0) + 1);
      console.info(
        `test-coverage (COVERAGE_SEED=${SEED}): ${all.length} calls (${faked.length} faker, ${examples.length} examples): ${results} results, ${resultFailures.length} result failures, ` +
          `${officialFailures.length} execution-apis failures; ${refused} refused -32602 by the spec (${refusedButForwarded.length} of them reached the node); ` +
          `${nodeRefused.length} refused by the node; ${nodeStateAnswers.length} -32602 from the node about its state (block above the head); ` +
          `other errors by code: ${[...byCode].map(([k, v]) => `${k}×${v}`).join(', ') || 'none'}`,
      );
      const seeded = (found: string[]) => `COVERAGE_SEED=${SEED}\n${found.join('\n')}`;
      expect(requestErrors, seeded(requestErrors)).toEqual([]);
      expect(resultFailures, seeded(resultFailures)).toEqual([]);
      expect(officialFailures, seeded(officialFailures)).toEqual([]);
      expect(refusedButForwarded, seeded(refusedButForwarded)).toEqual([]);
      expect(nodeRefused, seeded(nodeRefused)).toEqual([]);
      // The run did exercise both sides: answers with results, and refusals.
      expect(results).toBeGreaterThan(50);
      expect(refused).toBeGreaterThan(0);
    },
  );
});

const ZERO_BLOB = `0x${'00'.repeat(131072)}`;
function narrowBlobs<T>(node: T): T {
  if (Array.isArray(node)) return node.map(narrowBlobs) as T;
  if (node === null || typeof node !== 'object') return node;
  const o = node as Record<string, unknown>;
  if (o.title === 'Blob') return { title: 'Blob', type: 'string', enum: [ZERO_BLOB] } as T;
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, narrowBlobs(v)])) as T;
}

/** A small seeded generator (mulberry32): uniform in [0, 1), the same sequence for the same seed. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
