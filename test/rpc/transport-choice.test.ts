import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Anvil } from '../../src/devnet/anvil.js';
import { loadRpcConfig, startRpc } from '../../src/rpc/index.js';
import { chooseTransport, probeUws, UWS_PACKAGE } from '../../src/rpc/transport/uws/load.js';
import { canRecount } from '../../src/rpc/transport/uws/connections.js';
import { checkWorkers } from '../../src/rpc/workers.js';
import { testCommon } from '../helpers/common.js';
import { openTestDb } from '../helpers/db.js';
import { chain } from './helpers.js';

/**
 * RPC_TRANSPORT=auto (the default) and what it chooses on the Node running this test: uWebSockets.js where
 * the package's build for this Node's ABI loads (on Debian 12 Node 20's does; Node 22's and 24's need glibc 2.38,
 * which Debian 13 has) and the connection caps hold (Linux: canRecount; `.ci/run` runs this file on
 * each line), node:http elsewhere. Which stack answered is read from outside:
 * uWS writes its `uWebSockets` header on every response, node:http does not.
 */
const here = createRequire(import.meta.url);
const uwsBuildHere = existsSync(
  join(
    dirname(here.resolve(`${UWS_PACKAGE}/package.json`)),
    `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`,
  ),
);
/** Whether that build loads here (its glibc) and so can run. */
const uwsRuns = probeUws().ok;

let anvil: Anvil;
let testDb: Awaited<ReturnType<typeof openTestDb>>;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  ({ anvil } = await chain());
  testDb = await openTestDb();
}, 120_000);
afterAll(async () => {
  await Promise.allSettled(stops.map((stop) => stop()));
  await testDb?.close();
  await anvil?.stop();
});

/** The endpoint in this process with RPC_TRANSPORT as given ('' leaves it unset), its log lines kept. */
async function start(transport: string, name: string) {
  const common = testCommon('info');
  const env = {
    RPC_PORT: '0',
    RPC_UPSTREAM_URLS: anvil.url,
    RPC_RATE_LIMIT_PER_SECOND: '0',
    ...(transport ? { RPC_TRANSPORT: transport } : {}),
  };
  const config = loadRpcConfig(env, { dbSchema: testDb.schema(name) });
  const running = await startRpc({ common, db: testDb.client, config });
  stops.push(() => common.shutdown.run('test done'));
  const res = await fetch(running.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
  });
  const body = (await res.json()) as { result?: string };
  return {
    running,
    logs: common.logs.map((l) => JSON.parse(l) as Record<string, unknown>),
    uwsHeader: res.headers.get('uwebsockets'),
    chainId: body.result,
  };
}

describe(`RPC_TRANSPORT on Node ${process.version} (ABI ${process.versions.modules}; ${UWS_PACKAGE} ${uwsBuildHere ? 'has' : 'has no'} build for it${uwsBuildHere ? `, which ${uwsRuns ? 'loads' : 'does not load'}` : ''})`, () => {
  it('args: RPC_TRANSPORT is auto (the default), node or uws; anything else, and uws with RPC_WORKERS > 1, are refused at start by name', () => {
    expect(loadRpcConfig({ RPC_UPSTREAM_URLS: 'http://127.0.0.1:8545' }).transport).toBe('auto');
    expect(() => loadRpcConfig({ RPC_UPSTREAM_URLS: 'http://127.0.0.1:8545', RPC_TRANSPORT: 'fast' })).toThrow(
      /RPC_TRANSPORT/,
    );
    const config = loadRpcConfig({
      RPC_UPSTREAM_URLS: 'http://127.0.0.1:8545',
      RPC_TRANSPORT: 'uws',
      RPC_WORKERS: '2',
      RPC_RATE_LIMIT_PER_SECOND: '0',
    });
    expect(() => checkWorkers(config, { kind: 'postgres' })).toThrow(/RPC_WORKERS=2 needs RPC_TRANSPORT=node/);
  });

  it('behavior: unset (auto), the endpoint is on uWebSockets.js where its build loads and holds the connection caps, on node:http elsewhere, and logs which and why', async () => {
    const { running, logs, uwsHeader, chainId } = await start('', 'auto');
    expect(chainId).toBe('0x539');
    const uwsChosen = uwsRuns && canRecount();
    expect(running.transport).toBe(uwsChosen ? 'uws' : 'node');
    expect(uwsHeader !== null).toBe(uwsChosen);
    const chosen = logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('rpc transport'));
    expect(chosen).toMatchObject({ transport: running.transport });
    const why = uwsChosen
      ? /RPC_TRANSPORT=auto: uWebSockets\.js's build uws_\w+\.node loads on Node v\S+ and holds the connection caps/
      : uwsRuns
        ? /RPC_TRANSPORT=auto: uWebSockets\.js's build uws_\w+\.node loads, but .*HTTP_MAX_CONNECTIONS_PER_CLIENT would not hold/
        : uwsBuildHere
          ? /RPC_TRANSPORT=auto: uWebSockets\.js cannot run here \(its build uws_\w+\.node needs glibc >= [\d.]+, this machine has glibc [\d.]+\)/
          : new RegExp(
              `RPC_TRANSPORT=auto: uWebSockets\\.js cannot run here \\(.*ABI ${process.versions.modules}.*\\)`,
            );
    expect(String(chosen?.why)).toMatch(why);
  });

  it('behavior: auto with RPC_WORKERS > 1 chooses node:http (node:cluster shares the port), saying so', () => {
    expect(chooseTransport('auto', 2)).toMatchObject({
      transport: 'node',
      why: expect.stringMatching(/RPC_WORKERS=2.*node:cluster/),
    });
  });

  it('behavior: RPC_TRANSPORT=node is node:http on every Node line', async () => {
    const { running, uwsHeader, chainId } = await start('node', 'node');
    expect([running.transport, uwsHeader, chainId]).toEqual(['node', null, '0x539']);
  });

  it.runIf(uwsRuns)('behavior: RPC_TRANSPORT=uws starts on uWebSockets.js where its build loads', async () => {
    const { running, uwsHeader, chainId } = await start('uws', 'uws');
    expect([running.transport, uwsHeader !== null, chainId]).toEqual(['uws', true, '0x539']);
  });

  it.runIf(uwsBuildHere && !uwsRuns)(
    'error: RPC_TRANSPORT=uws where its build does not load refuses at start, naming the glibc it needs and the one here',
    async () => {
      const config = loadRpcConfig(
        { RPC_PORT: '0', RPC_UPSTREAM_URLS: anvil.url, RPC_RATE_LIMIT_PER_SECOND: '0', RPC_TRANSPORT: 'uws' },
        { dbSchema: testDb.schema('refused_glibc') },
      );
      const common = testCommon();
      stops.push(() => common.shutdown.run('test done'));
      const refused = startRpc({ common, db: testDb.client, config });
      await expect(refused).rejects.toThrow(
        /RPC_TRANSPORT=uws cannot run here: its build uws_\w+\.node needs glibc >= [\d.]+, this machine has glibc [\d.]+; use RPC_TRANSPORT=auto or node/,
      );
    },
  );

  it.skipIf(uwsBuildHere)(
    'error: RPC_TRANSPORT=uws where there is no build for this Node refuses at start, naming this Node ABI and the ABIs (Node lines) it has builds for',
    async () => {
      const config = loadRpcConfig(
        { RPC_PORT: '0', RPC_UPSTREAM_URLS: anvil.url, RPC_RATE_LIMIT_PER_SECOND: '0', RPC_TRANSPORT: 'uws' },
        { dbSchema: testDb.schema('refused') },
      );
      const common = testCommon();
      stops.push(() => common.shutdown.run('test done'));
      const refused = startRpc({ common, db: testDb.client, config });
      await expect(refused).rejects.toThrow(
        new RegExp(
          `RPC_TRANSPORT=uws cannot run here: .*ABI ${process.versions.modules}\\b.*builds for Node ABI .*\\(Node \\d+\\).*use RPC_TRANSPORT=auto or node`,
        ),
      );
    },
  );
});
