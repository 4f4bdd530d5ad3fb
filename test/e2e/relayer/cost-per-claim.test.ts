import { afterAll, beforeAll, describe, expect, inject, it, onTestFailed } from 'vitest';
import { openTestDb } from '../../helpers/db.js';
import { loadRelayerConfig } from '../../../src/relayer/config.js';
import { startRelayer } from '../../../src/relayer/index.js';
import { countStatements } from '../../relayer/statement-counter.js';
import { within } from '../../helpers/within.js';
import { testCommon } from './harness.js';
import { keys, useSharedDevnet, waitClaimed, type SharedRelayerDevnet } from './shared-devnet.js';

/**
 * Issue 12: what a claimed message costs the database and the nodes, end to end (listening, anchoring,
 * claiming, receipts; the relayer's start-up and idle polling while it waits for the coordinator
 * included): at most 8 SQL statements and at most 3 per-message JSON-RPC calls (estimate, send, status
 * reads) per claimed message, counted from knex's query events and relayer_rpc_calls_total.
 */
const state = inject('devnet');
const COUNT = 40;
/**
 * Methods whose calls grow with the messages. Polling grows with time instead (eth_blockNumber, eth_getLogs,
 * and eth_getBlockReceipts, read once per new block while claims are pending), and this test's time
 * depends on how loaded the machine is. So do receipts read by hash: they are the fallback for blocks the
 * per-block read has passed (at most 16 new blocks per tick), which a slow tick makes more of (CI: 17 on
 * PGlite, 44 on Postgres for 80 claims); they are printed, not bounded.
 */
const PER_MESSAGE_METHODS = ['eth_call', 'eth_estimateGas', 'eth_sendRawTransaction', 'eth_getTransactionByHash'];
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let d: SharedRelayerDevnet | undefined;

beforeAll(async () => {
  testDb = await openTestDb();
});
afterAll(async () => {
  d?.destroy();
  await testDb?.close();
});

describe('relayer cost per claim', () => {
  it(
    `behavior: ${COUNT} messages each way are claimed with at most 8 SQL statements and 3 per-message RPC calls (estimate, send, status) per claim`,
    { timeout: 300_000 },
    async () => {
      d = await within('the test accounts to be funded', 20_000, useSharedDevnet(state, 'random'));
      const sent = { l1: await d.send('l1', COUNT), l2: await d.send('l2', COUNT) };
      const schema = testDb.schema('relayer_cost');
      // The relayer's own lines (debug included) are kept, and printed if the test fails: they say where it stood.
      const common = testCommon('debug');
      onTestFailed(() => console.log(`relayer log (last 80 lines):\n${common.logs.slice(-80).join('')}`));
      const statements = countStatements(testDb.client.knex, schema);
      const loaded = loadRelayerConfig(d.env());
      const relayer = await within(
        'the relayer to start',
        30_000,
        startRelayer({ common, db: testDb.client, config: { ...loaded, api: { ...loaded.api, port: 0 } }, schema }),
      );
      let claimed;
      try {
        claimed = await within(
          'the claims (or waitClaimed giving up)',
          100_000,
          waitClaimed(testDb.client, schema, sent, 80_000),
        );
      } finally {
        statements.stop();
        await within('the relayer to stop', 15_000, relayer.stop());
      }
      const unclaimed = [...claimed.entries()].filter(([, c]) => c.status !== 'CLAIMED_SUCCESS');
      expect(unclaimed, `${claimed.size} of ${keys(sent).length} messages stored`).toEqual([]);
      expect([...claimed.values()].filter((c) => c.status === 'CLAIMED_SUCCESS')).toHaveLength(keys(sent).length);
      const claims = keys(sent).length;
      const rpcValues = (await common.metrics.getSingleMetric('relayer_rpc_calls_total')!.get()).values;
      const byMethod: Record<string, number> = {};
      for (const v of rpcValues) byMethod[String(v.labels.method)] = (byMethod[String(v.labels.method)] ?? 0) + v.value;
      const rpc = Object.values(byMethod).reduce((a, n) => a + n, 0);
      const perClaim = { statements: statements.count() / claims, rpc: rpc / claims, byKind: statements.byKind() };
      console.log(
        `per claim on ${testDb.client.kind}: ${perClaim.statements.toFixed(2)} SQL statements ${JSON.stringify(perClaim.byKind)}, ${perClaim.rpc.toFixed(2)} RPC calls ${JSON.stringify(byMethod)}`,
      );
      expect(perClaim.statements).toBeLessThanOrEqual(8);
      // Calls made per message (not per polling tick, which depends on how long the chains take here).
      const perMessage = PER_MESSAGE_METHODS.reduce((a, m) => a + (byMethod[m] ?? 0), 0) / claims;
      expect(perMessage).toBeLessThanOrEqual(3);
    },
  );
});
