import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import Ajv from 'ajv';
import { openTestDb } from '../helpers/db.js';
import { chain, post, startTestRpc } from './helpers.js';
import { loadRpcSpec, type SpecMethod } from '../../src/rpc/spec.js';
import { countingNode, type CountingNode, type Refusal } from '../conformance/counting-node.js';
import { arbitraryFor } from '../conformance/schema-arbitrary.js';
import type { Anvil } from '../../src/devnet/anvil.js';

let anvil: Anvil;
let upstream: CountingNode;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let methods: SpecMethod[];

beforeAll(async () => {
  ({ anvil } = await chain());
  upstream = await countingNode(anvil.url);
  db = await openTestDb();
  // Head tracking off (one poll at start) and the pending-transaction watch polled by calls only (its timer
  // hourly: filters/pending.ts), so every upstream request during a run comes from a call.
  rpc = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc'),
    upstreams: [upstream.url],
    env: { RPC_UPSTREAM_HEAD_POLL_MS: '3600000', RPC_WS_PENDING_POLL_MS: '3600000' },
  });
  methods = (await loadRpcSpec()).dereferenced.methods;
});

afterAll(async () => {
  await rpc?.stop();
  await upstream?.close();
  await anvil?.stop();
  await db?.close();
});

/** What the spec says about params, computed independently of the endpoint (ajv over the same schemas). */
function paramsValid(method: SpecMethod, params: unknown[]): boolean {
  if (params.length > method.params.length) return false;
  const ajv = new Ajv();
  return method.params.every((p, i) =>
    params[i] === undefined ? !p.required : ajv.validate(p.schema as object, params[i]) === true,
  );
}

const value = fc.oneof(
  fc.constantFrom(
    '0x',
    '0x0',
    '0x1',
    'latest',
    'pending',
    'earliest',
    'finalized',
    `0x${'ab'.repeat(20)}`,
    `0x${'cd'.repeat(32)}`,
    '0xzz',
    '',
    'callTracer',
  ),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 12 }),
  fc.dictionary(
    fc.constantFrom('fromBlock', 'toBlock', 'address', 'topics', 'to', 'data', 'tracer', 'x'),
    fc.constantFrom('0x1', 'latest', null, 7, [], 'callTracer'),
    { maxKeys: 3 },
  ),
  fc.array(fc.constantFrom(null, '0x1', `0x${'cd'.repeat(32)}`), { maxLength: 3 }),
);

describe('fuzzing', () => {
  it('behavior: arbitrary bodies never get a 5xx, always JSON, never reach an upstream', async () => {
    const body = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      fc
        .record({
          jsonrpc: fc.constantFrom('2.0', '1.0', 2),
          id: fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.object()),
          method: fc.oneof(fc.string(), fc.integer()),
          params: value,
        })
        .map((v) => JSON.stringify(v)),
      fc
        .array(fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), method: fc.string({ maxLength: 10 }) }), {
          maxLength: 5,
        })
        .map((v) => JSON.stringify(v)),
    );
    const before = upstream.calls();
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        const r = await post(rpc.url, text);
        expect(r.status).toBeLessThan(500);
        if (r.text !== '') JSON.parse(r.text);
      }),
      { numRuns: 300 },
    );
    expect(upstream.calls() - before).toBe(0);
  });

  it('behavior: random params for every served method: invalid ones are -32602 without an upstream call; nothing is an internal error', async () => {
    let invalid = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...methods), fc.array(value, { maxLength: 4 }), async (method, params) => {
        const before = upstream.calls();
        const r = await post(rpc.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: method.name, params }));
        expect(r.status).toBeLessThan(500);
        const reply = JSON.parse(r.text) as { error?: { code: number; message: string } };
        expect(reply.error?.code, reply.error?.message).not.toBe(-32603);
        if (!paramsValid(method, params)) {
          invalid++;
          expect(reply.error?.code, `${method.name} ${JSON.stringify(params)}`).toBe(-32602);
          expect(upstream.calls() - before, `${method.name} ${JSON.stringify(params)} reached the upstream`).toBe(0);
        }
      }),
      { numRuns: 400 },
    );
    expect(invalid).toBeGreaterThan(100);
  });

  it(
    'behavior: params the spec accepts are never refused by the node: every malformed input is refused by us first',
    { timeout: 120_000 },
    async () => {
      // Spec-valid params generated from the spec's own schemas (as an OpenRPC fuzzer does); a fixed seed, so
      // a count can be compared between two versions of the spec (FUZZ_SEED picks another sample).
      const seed = Number(process.env.FUZZ_SEED ?? 16);
      const perMethod = 25;
      const reached: (Refusal & { called: string })[] = [];
      const stateAnswersBefore = upstream.stateAnswers.length;
      let sent = 0;
      for (const method of methods) {
        const samples =
          method.params.length === 0 ? [[]] : fc.sample(specValidParams(method), { numRuns: perMethod, seed });
        for (const params of samples) {
          const before = upstream.refusals.length;
          const r = await post(rpc.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: method.name, params }));
          sent++;
          expect(r.status, `${method.name} ${JSON.stringify(params).slice(0, 200)}`).toBeLessThan(500);
          reached.push(...upstream.refusals.slice(before).map((f) => ({ ...f, called: method.name })));
        }
      }
      const summary = reached.map(
        (f) =>
          `${f.called}${f.method === f.called ? '' : ` (sent ${f.method})`} ${f.code} ${f.message} <- ${String(JSON.stringify(f.params)).slice(0, 160)}`,
      );
      const aboutState = upstream.stateAnswers.length - stateAnswersBefore;
      console.info(
        `spec-valid fuzzing: ${sent} calls, ${reached.length} reached the node only to be refused, ${aboutState} answered -32602 about the chain's state (a block above the head)${summary.length ? `:\n${summary.join('\n')}` : ''}`,
      );
      expect(summary).toEqual([]);
    },
  );
});

/** Positional params the spec accepts: required ones always, optional ones at the end sometimes left out. */
function specValidParams(method: SpecMethod): fc.Arbitrary<unknown[]> {
  const firstOptional = method.params.findIndex((p) => !p.required);
  const all = fc.tuple(...method.params.map((p) => arbitraryFor(p.schema)));
  if (firstOptional < 0) return all;
  return fc
    .tuple(all, fc.integer({ min: firstOptional, max: method.params.length }))
    .map(([values, n]) => values.slice(0, n));
}
