import { readFileSync, readdirSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRpcSpec, type SpecMethod } from '../../src/rpc/spec.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { openTestDb } from '../helpers/db.js';
import { call, chain, startTestRpc, type RpcReply } from '../rpc/helpers.js';
import { countingNode, type CountingNode } from './counting-node.js';
import { arbitraryFor } from './schema-arbitrary.js';

/**
 * Every refusal of ours is differential (issue 36): for each of our rules on call objects, state overrides,
 * filters, block parameters and fee-history percentiles, the same spec-valid params go through the endpoint and
 * straight to anvil. A call we refuse without asking the node must be refused by anvil too, unless the refusal
 * is one of the protective ones, which name their variable from the one table in the docs ("Refusals that protect
 * the node"). A call we answer must get the same verdict (answer or error) as anvil straight. Inputs: samples of
 * the spec's own schemas (fixed seed; DIFF_SEED picks another) and, per rule, the spec-valid inputs the rule is
 * about. Each rule prints what it tried and how the verdicts compared.
 */

let anvil: Anvil;
let node: CountingNode;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let methods: Map<string, SpecMethod>;
let protective: string;

beforeAll(async () => {
  ({ anvil } = await chain());
  node = await countingNode(anvil.url);
  db = await openTestDb();
  rpc = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc'),
    upstreams: [node.url],
    env: { RPC_UPSTREAM_HEAD_POLL_MS: '3600000', RPC_WS_PENDING_POLL_MS: '3600000' },
  });
  methods = new Map((await loadRpcSpec()).dereferenced.methods.map((m) => [m.name, m]));
  protective = protectiveTable();
});

afterAll(async () => {
  await rpc?.stop();
  await node?.close();
  await anvil?.stop();
  await db?.close();
});

/**
 * The docs' one table of protective refusals, read from whichever page holds it: a refusal of ours that anvil
 * would not make is allowed when it names a variable of that table or its reason is written there (geth's
 * verdicts that anvil does not share).
 */
function protectiveTable(): string {
  for (const file of readdirSync('docs').filter((f) => f.endsWith('.md'))) {
    const text = readFileSync(`docs/${file}`, 'utf8');
    const at = text.indexOf('Refusals that protect the node');
    if (at < 0) continue;
    const end = text.indexOf('\n#', at + 1);
    return text.slice(at, end === -1 ? undefined : end);
  }
  throw new Error('no docs page holds the table "Refusals that protect the node"');
}

function isProtective(table: string, message: string): boolean {
  const variable = message.match(/\b(?:RPC|HTTP)_[A-Z_]+/)?.[0];
  if (variable) return table.includes(`\`${variable}\``);
  // "invalid params: param 2 (name) at name.1: 10 is below 50: <reason>" or "...: <reason> (<advice>)": a part of the
  // message after the param's path, without its advice in brackets, written in the table.
  const detail = message.replace(/^.*?: param \d+ \([^)]*\)(?: at [^:]*)?: /, '');
  return detail
    .split(': ')
    .map((part) => part.replace(/ \(.*$/, ''))
    .some((part) => part.length > 10 && table.includes(part));
}

/** anvil's -32602 about its state, not the input's form: a block above its head (geth accepts such a filter). */
const ABOUT_STATE = /BlockOutOfRangeError|block height is \d+ but requested was/;

const A = '0x8ba1f109551bd432803012645ac136ddd64dba72';
const TO = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
const TOPIC = `0x${'cd'.repeat(32)}`;

interface Rule {
  name: string;
  /** Methods whose spec-valid params are sampled, each with the fixed params around the sampled one. */
  sampled: string[];
  /** Spec-valid inputs the rule is about, as [method, params]. */
  cases: [string, unknown[]][];
}

const RULES: Rule[] = [
  {
    name: 'call objects',
    sampled: ['eth_call', 'eth_estimateGas', 'eth_createAccessList'],
    cases: [
      ['eth_call', [{ to: TO, data: '0x01', input: '0x02' }, 'latest']],
      ['eth_call', [{ to: TO, data: '0xab', input: '0xAB' }, 'latest']],
      ['eth_call', [{ to: TO, gasPrice: '0x1', maxFeePerGas: '0x2' }, 'latest']],
      ['eth_call', [{ to: TO, maxPriorityFeePerGas: '0x1' }, 'latest']],
      ['eth_call', [{ to: TO, maxPriorityFeePerGas: '0x0' }, 'latest']],
      ['eth_call', [{ to: TO, maxFeePerGas: '0x1', maxPriorityFeePerGas: '0x2' }, 'latest']],
      ['eth_call', [{ to: TO, maxFeePerGas: '0x2', maxPriorityFeePerGas: '0x2' }, 'latest']],
      ['eth_call', [{ to: TO, somethingNew: '0x1' }, 'latest']],
      ['eth_call', [{ to: TO, commitments: [`0x${'00'.repeat(48)}`] }, 'latest']],
      ['eth_estimateGas', [{ from: A, to: TO, value: '0x0' }]],
      ['eth_estimateGas', [{ from: A, to: null, data: '0x00' }]],
      ['eth_createAccessList', [{ from: A, to: TO, gas: '0x5208' }, 'latest']],
    ],
  },
  {
    name: 'state overrides',
    sampled: [],
    cases: [
      ['eth_call', [{ to: TO }, 'latest', { [A]: { balance: '0x1' } }]],
      ['eth_call', [{ to: TO }, 'latest', { [A]: { state: {}, stateDiff: {} } }]],
      [
        'eth_call',
        [{ to: TO }, 'latest', { [A]: { stateDiff: { [`0x${'00'.repeat(32)}`]: `0x${'00'.repeat(31)}01` } } }],
      ],
      ['eth_call', [{ to: TO }, 'latest', { [A]: { code: '0x6001', nonce: '0x5' } }]],
    ],
  },
  {
    name: 'filters',
    sampled: ['eth_getLogs', 'eth_newFilter'],
    cases: [
      ['eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest', topics: [null, TOPIC] }]],
      ['eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest', topics: [[TOPIC, TOPIC], null] }]],
      ['eth_getLogs', [{ address: [A, TO], fromBlock: 'earliest' }]],
      ['eth_getLogs', [{ address: A }]],
      ['eth_getLogs', [{ blockHash: `0x${'11'.repeat(32)}` }]],
      ['eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x0' }]],
      ['eth_getLogs', [{ topics: [] }]],
      ['eth_getLogs', [{ unknownMember: 1 }]],
      ['eth_newFilter', [{ fromBlock: 'latest', topics: [null] }]],
      ['eth_newFilter', [{ address: [] }]],
    ],
  },
  {
    name: 'block parameters',
    sampled: ['eth_getBalance', 'eth_getBlockByNumber', 'eth_getTransactionCount', 'eth_getCode', 'eth_getStorageAt'],
    cases: [
      ...['latest', 'earliest', 'pending', 'safe', 'finalized', '0x0', '0x1', '0xffffff'].map(
        (b): [string, unknown[]] => ['eth_getBalance', [A, b]],
      ),
      ['eth_getBalance', [A]],
      ['eth_getBalance', [A, { blockNumber: '0x0' }]],
      ['eth_getBalance', [A, { blockHash: `0x${'11'.repeat(32)}` }]],
      ['eth_getBalance', [A, { blockHash: `0x${'11'.repeat(32)}`, requireCanonical: true }]],
      ['eth_getBlockByNumber', ['safe', false]],
      ['eth_getBlockByNumber', ['pending', true]],
      ['eth_getBlockByNumber', ['0x10000', false]],
      ['eth_getCode', [TO, 'finalized']],
      ['eth_getTransactionCount', [A, 'pending']],
      ['eth_call', [{ to: TO }, { blockNumber: '0x0' }]],
      ['eth_call', [{ to: TO }]],
    ],
  },
  {
    name: 'fee history',
    sampled: ['eth_feeHistory'],
    cases: [
      ['eth_feeHistory', ['0x1', 'latest', [10, 50]]],
      ['eth_feeHistory', ['0x1', 'latest', [50, 10]]],
      ['eth_feeHistory', ['0x2', 'latest', []]],
    ],
  },
];

/** Positional params the spec accepts for a method: required ones always, optional trailing ones sometimes. */
function specValidParams(method: SpecMethod): fc.Arbitrary<unknown[]> {
  const firstOptional = method.params.findIndex((p) => !p.required);
  const all = fc.tuple(...method.params.map((p) => arbitraryFor(p.schema)));
  if (firstOptional < 0) return all;
  return fc
    .tuple(all, fc.integer({ min: firstOptional, max: method.params.length }))
    .map(([values, n]) => values.slice(0, n));
}

/**
 * The same call straight to anvil. An omitted optional block parameter is given as "latest", its default since
 * execution-apis #814 (which we apply; anvil 1.7.1's decoder predates it and refuses the shorter call).
 */
async function straight(method: string, params: unknown[]): Promise<RpcReply> {
  const spec = methods.get(method)!;
  const filled = [...params];
  for (let i = filled.length; i < spec.params.length; i++) {
    if (/block/i.test(spec.params[i]!.name) && i === filled.length) filled.push('latest');
  }
  return call(anvil.url, method, filled);
}

describe('differential: each rule of ours against anvil straight', () => {
  const seed = Number(process.env.DIFF_SEED ?? 36);
  for (const rule of RULES) {
    it(
      `behavior: ${rule.name}: no spec-valid input we refuse is accepted by anvil, and every answer has anvil's verdict`,
      { timeout: 120_000 },
      async () => {
        const inputs: [string, unknown[]][] = [...rule.cases];
        for (const name of rule.sampled) {
          const method = methods.get(name);
          expect(method, `${name} is in the spec`).toBeDefined();
          for (const params of fc.sample(specValidParams(method!), { numRuns: 30, seed })) inputs.push([name, params]);
        }
        const tally = { tried: 0, bothAnswer: 0, bothRefuse: 0, protectiveRefusals: 0, aboutState: 0 };
        const differ: string[] = [];
        for (const [method, params] of inputs) {
          tally.tried++;
          const before = node.calls();
          const ours = await call(rpc.url, method, params);
          const reachedNode = node.calls() > before;
          const theirs = await straight(method, params);
          const show = `${method} ${JSON.stringify(params).slice(0, 200)}`;
          if (theirs.error && ABOUT_STATE.test(theirs.error.message) && !ours.error) {
            tally.aboutState++;
          } else if (ours.error && !reachedNode) {
            if (theirs.error) tally.bothRefuse++;
            else if (isProtective(protective, ours.error.message)) tally.protectiveRefusals++;
            else
              differ.push(`we refuse (${ours.error.code} ${ours.error.message.slice(0, 160)}), anvil answers: ${show}`);
          } else if (Boolean(ours.error) === Boolean(theirs.error)) {
            if (ours.error) tally.bothRefuse++;
            else tally.bothAnswer++;
          } else {
            differ.push(
              `we ${ours.error ? `refuse (${ours.error.message.slice(0, 120)})` : 'answer'}, anvil ${theirs.error ? `refuses (${theirs.error.message.slice(0, 120)})` : 'answers'}: ${show}`,
            );
          }
        }
        console.info(
          `differential, ${rule.name}: ${tally.tried} inputs, ${tally.bothAnswer} answered by both, ${tally.bothRefuse} refused by both, ${tally.protectiveRefusals} protective refusals (in the docs' table), ${tally.aboutState} about anvil's state (a block above its head), ${differ.length} verdicts differ${differ.length ? `:\n${differ.join('\n')}` : ''}`,
        );
        expect(differ).toEqual([]);
        expect(tally.bothAnswer).toBeGreaterThan(0);
      },
    );
  }
});
