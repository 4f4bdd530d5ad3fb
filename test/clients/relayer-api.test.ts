import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/common/db/migrations.js';
import { listen, type RunningServer } from '../../src/common/http/server.js';
import { counter } from '../../src/common/metrics.js';
import { createRelayerApp } from '../../src/relayer/api/app.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import { RelayerRepository, type NewMessage } from '../../src/relayer/db/repository.js';
import { openTestDb } from '../helpers/db.js';
import { testCommon } from '../helpers/common.js';
import { generateClient, javaMissing, pythonMissing, root, runPython } from './generate.js';
import { writeSnippets } from './snippets.js';

/**
 * Issue 14, item 4, for specs/relayer-api.openapi.yaml: openapi-generator clients in TypeScript and
 * Python drive every operation against the relayer's HTTP API on a real socket over a real database
 * holding stored messages: typed records, the operator routes, and problem+json 400/404/409. (This API
 * has no conditional requests: no ETag, so no 304.) Issue 36 item 5: both clients are configured by the snippets of
 * docs/clients.md, run as the page shows them; what an admin call does on a default Python Configuration is pinned.
 */
const BOTH = `0x${'ab'.repeat(32)}`; // stored in both directions: ambiguous without `direction` (409)
const ONE = `0x${'cd'.repeat(32)}`;
const UNKNOWN = `0x${'ef'.repeat(32)}`;
/**
 * The admin routes' bearer token (API_ADMIN_TOKEN); the admin calls below change no state, so both clients see the same
 * data.
 */
const ADMIN_TOKEN = 'clients-test-admin-token'.padEnd(40, '0');

const message = (
  hash: string,
  direction: NewMessage['direction'],
  nonce: number,
  status: NewMessage['status'] = 'SENT',
): NewMessage => ({
  message_hash: hash,
  direction,
  message_sender: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
  destination: '0x90f79bf6eb2c4f870365e785982e1f101e93b906',
  fee: '1000000000000000',
  value: '5000000000000000000',
  message_nonce: String(nonce),
  calldata: '0x',
  contract_address: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512',
  sent_block_number: 100 + nonce,
  sent_tx_hash: `0x${nonce.toString(16).padStart(64, '0')}`,
  sent_log_index: 0,
  status,
  failure_reason: status === 'EXCLUDED' ? 'calldata filter: destination not allowed' : null,
});

// Generating a client (a JVM start) and driving it: minutes on a loaded CI machine.
const GENERATION_TIMEOUT = 300_000;
let db: Awaited<ReturnType<typeof openTestDb>>;
let server: RunningServer;
let ready = true;

beforeAll(async () => {
  db = await openTestDb();
  const schema = db.schema('relayer');
  await db.client.query('test.relayer_api', (knex) => migrate(knex, schema, relayerMigrations));
  const repo = new RelayerRepository(db.client, schema);
  await repo.storeMessages(
    [message(BOTH, 'L1_TO_L2', 1), message(BOTH, 'L2_TO_L1', 2), message(ONE, 'L2_TO_L1', 3, 'EXCLUDED')],
    { name: 'clients-test', lastBlock: 200 },
  );
  const common = testCommon();
  // The relayer registers its metrics on this registry when it runs; one here so getMetrics has a body.
  counter(common.metrics, 'l2stack_relayer_clients_test_total', 'Requests of the generated-client test').inc();
  const app = createRelayerApp(
    { repo, db: db.client, registry: common.metrics, readiness: async () => [{ name: 'database', ok: ready }] },
    common.logger,
    { validateResponses: true, admin: { token: ADMIN_TOKEN, maxFailures: 100 } },
  );
  server = await listen(app, '127.0.0.1', 0, 'relayer API', { logger: common.logger });
}, 180_000);
afterAll(async () => {
  await server?.close();
  await db?.close();
});

describe.skipIf(javaMissing !== undefined)(
  'relayer API: TypeScript client (openapi-generator typescript-fetch)',
  () => {
    if (javaMissing) console.warn(`generated-client tests skipped: ${javaMissing}`);

    it(
      'behavior: every operation returns typed bodies; errors surface as the problem+json Response',
      async () => {
        const { dir } = generateClient('relayer-api.openapi.yaml', 'typescript-fetch', { typescriptThreePlus: 'true' });
        // The client is generated at test time: its types do not exist at compile time.
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const c: any = await import(pathToFileURL(join(dir, 'index.ts')).href);
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the snippets import the generated client
        const snippets: any = await import(
          pathToFileURL(join(writeSnippets({ 'relayer-api-client': dir }), 'relayer-client-snippets.ts')).href
        );
        const config = new c.Configuration(snippets.relayerApiParameters(server.url));
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const apis: any[] = Object.keys(c)
          .filter((k) => /^[A-Z]\w*Api$/.test(k))
          .map((k) => new c[k](config));
        const op = (name: string) => {
          const api = apis.find((a) => typeof a[name] === 'function');
          if (!api) throw new Error(`no operation ${name} in the generated client`);
          return (...args: unknown[]) => api[name](...args);
        };
        const failure = async (call: () => Promise<unknown>) => {
          try {
            await call();
          } catch (e) {
            const res = e as Response;
            return { status: res.status, type: res.headers.get('content-type'), body: await res.json() };
          }
          return undefined;
        };

        expect(await op('getMetrics')()).toMatch(/^# HELP /m);
        expect(await op('getLiveness')()).toEqual({ status: 'ok' });
        expect(await op('getReadiness')()).toMatchObject({ status: 'ok', checks: [{ name: 'database', ok: true }] });
        ready = false;
        try {
          expect(await failure(() => op('getReadiness')())).toMatchObject({
            status: 503,
            body: { status: 'unavailable', checks: [{ name: 'database', ok: false }] },
          });
        } finally {
          ready = true;
        }

        const one = await op('getMessage')({ messageHash: ONE.toUpperCase().replace('0X', '0x') });
        expect(one).toMatchObject({
          messageHash: ONE,
          direction: 'L2_TO_L1',
          status: 'EXCLUDED',
          fee: '1000000000000000',
          messageNonce: '3',
          sentBlockNumber: 103,
        });
        expect(one.createdAt).toBeInstanceOf(Date);
        expect(one.history.map((h: { status: string }) => h.status)).toContain('EXCLUDED');
        expect((await op('getMessage')({ messageHash: BOTH, direction: 'L1_TO_L2' })).messageNonce).toBe('1');
        const problem = (status: number) => ({
          status,
          type: expect.stringMatching(/^application\/problem\+json/),
          body: expect.objectContaining({ status }),
        });
        expect(await failure(() => op('getMessage')({ messageHash: BOTH }))).toEqual(problem(409));
        expect(await failure(() => op('getMessage')({ messageHash: UNKNOWN }))).toEqual(problem(404));
        expect(await failure(() => op('getMessage')({ messageHash: '0x12' }))).toEqual(problem(400));

        const page = await op('listMessages')({});
        expect(page.meta).toEqual({ page: 1, limit: 50, totalItemsCount: 3, pagesCount: 1 });
        const filtered = await op('listMessages')({ status: 'EXCLUDED', direction: 'L2_TO_L1', page: 1, limit: 10 });
        expect(filtered.data.map((m: { messageHash: string }) => m.messageHash)).toEqual([ONE]);
        expect(await failure(() => op('listMessages')({ limit: 500 }))).toEqual(problem(400));

        const history = await op('getMessageHistory')({ messageHash: ONE });
        expect(history).toMatchObject({
          messageHash: ONE,
          direction: 'L2_TO_L1',
          status: 'EXCLUDED',
          history: [{ from: null, to: 'EXCLUDED' }],
        });
        expect(history.history[0].at).toBeInstanceOf(Date);
        expect(await failure(() => op('getMessageHistory')({ messageHash: BOTH }))).toEqual(problem(409));
        // The bearer token through the generated client's own security handling (accessToken).
        const admin = new c.Configuration(snippets.relayerApiParameters(server.url, ADMIN_TOKEN));
        const adminOp =
          (name: string) =>
          (...args: unknown[]) =>
            (
              Object.keys(c)
                .filter((k) => /^[A-Z]\w*Api$/.test(k))
                .map((k) => new c[k](admin))
                // eslint-disable-next-line @typescript-eslint/no-explicit-any
                .find((a: any) => typeof a[name] === 'function') as any
            )[name](...args);
        const same = await adminOp('retryMessage')({ messageHash: BOTH, direction: 'L1_TO_L2' });
        expect(same).toMatchObject({ action: 'retry', changed: false, message: { status: 'SENT' } });
        expect(await failure(() => adminOp('abandonMessage')({ messageHash: ONE }))).toEqual(problem(409));
        expect(await failure(() => op('retryMessage')({ messageHash: ONE }))).toEqual(problem(401));
      },
      GENERATION_TIMEOUT,
    );
  },
);

describe.skipIf(javaMissing !== undefined || pythonMissing !== undefined)(
  'relayer API: Python client (openapi-generator python)',
  () => {
    if (pythonMissing) console.warn(`Python client tests skipped: ${pythonMissing}`);

    it(
      'behavior: every operation returns typed models; errors raise ApiException with the problem+json body',
      async () => {
        const { dir } = generateClient('relayer-api.openapi.yaml', 'python', { packageName: 'relayer_api_client' });
        const out = await runPython(join(root, 'test/clients/drive_relayer_api.py'), [
          dir,
          server.url,
          JSON.stringify({ both: BOTH, one: ONE, unknown: UNKNOWN, token: ADMIN_TOKEN, snippets: writeSnippets() }),
        ]);
        const problem = (status: number) => ({
          status,
          type: expect.stringMatching(/^application\/problem\+json/),
          body: expect.objectContaining({ status }),
        });

        expect(out.metrics).toMatchObject({
          status: 200,
          type: expect.stringMatching(/^text\/plain/),
          text: expect.stringMatching(/^# HELP /m),
        });
        expect(out.liveness).toEqual({ cls: 'Liveness', status: 'ok' });
        expect(out.readiness).toEqual({
          cls: 'Readiness',
          status: 'ok',
          checks: [{ cls: 'Check', name: 'database', ok: true }],
        });

        expect(out.one).toMatchObject({
          cls: 'MessageRecord',
          hash: ONE,
          direction: 'L2_TO_L1',
          status: 'EXCLUDED',
          fee: '1000000000000000',
          value: '5000000000000000000',
          nonce: '3',
          block: 103,
          failureReason: 'calldata filter: destination not allowed',
        });
        expect(out.one.history.every((h: { cls: string }) => h.cls === out.one.history[0].cls)).toBe(true);
        expect(out.bothL1).toMatchObject({ cls: 'MessageRecord', hash: BOTH, direction: 'L1_TO_L2', nonce: '1' });
        expect(out.both409).toEqual(problem(409));
        expect(out.unknown404).toEqual(problem(404));
        expect(out.bad400).toEqual(problem(400));

        expect(out.list).toMatchObject({ cls: 'MessagePage', total: 3 });
        expect([...out.list.hashes].sort()).toEqual([`${BOTH}/L1_TO_L2`, `${BOTH}/L2_TO_L1`, `${ONE}/L2_TO_L1`].sort());
        expect(out.listFiltered).toMatchObject({ total: 1, pages: 1, records: [{ hash: ONE, status: 'EXCLUDED' }] });
        expect(out.listBadLimit).toEqual(problem(400));
        expect(out.listBadStatus).toEqual(problem(400));

        expect(out.history).toEqual({
          cls: 'MessageHistory',
          status: 'EXCLUDED',
          lines: [{ cls: 'HistoryEntry', from: null, to: 'EXCLUDED' }],
        });
        expect(out.retrySame).toEqual({ cls: 'AdminActionResult', action: 'retry', changed: false, status: 'SENT' });
        expect(out.abandon409).toEqual(problem(409));
        expect(out.retry401).toEqual(problem(401));
        // The generator's: a default Configuration never sets access_token, which every admin call reads.
        expect(out.retryDefaultConfiguration).toBe(
          "AttributeError: 'Configuration' object has no attribute 'access_token'",
        );
      },
      GENERATION_TIMEOUT,
    );
  },
);
