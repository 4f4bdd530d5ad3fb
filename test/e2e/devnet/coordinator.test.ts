import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { parseEther } from 'ethers';
import { L1MessageService__factory, L2MessageService__factory } from '../../../generated/contracts/types/index.js';
import { startDevnet, type Devnet } from '../../../src/devnet/devnet.js';
import {
  startCoordinator,
  DEFAULT_COORDINATOR,
  type CoordinatorConfig,
} from '../../../src/devnet/coordinator/index.js';
import { ROLES } from '../../../src/devnet/accounts.js';
import { createLogger } from '../../../src/common/log.js';
import { createMetrics } from '../../../src/common/metrics.js';
import { Shutdown } from '../../../src/common/shutdown.js';
import { openTestDb } from '../../helpers/db.js';
import { devnetSigners, waitFor } from '../../helpers/chain.js';
import { mined } from '../../../src/common/chain/mined.js';

/** A devnet of its own without a coordinator, so this file controls coordinators completely. */
const quiet = () => createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) });
const common = () => ({ logger: quiet(), metrics: createMetrics({ defaultMetrics: false }), shutdown: new Shutdown() });

let devnet: Devnet;
let db: Awaited<ReturnType<typeof openTestDb>>;
let config: CoordinatorConfig;
let schema: string;
let s: ReturnType<typeof devnetSigners>;
const owner = common();

beforeAll(async () => {
  db = await openTestDb();
  schema = db.schema('devnet');
  devnet = await startDevnet({ common: owner, db: db.client, options: { historyHours: 0, coordinator: false } });
  config = {
    ...DEFAULT_COORDINATOR,
    l1: {
      rpcUrl: devnet.state.l1.rpcUrl,
      chainId: devnet.state.l1.chainId,
      messageService: devnet.state.l1.messageService,
    },
    l2: {
      rpcUrl: devnet.state.l2.rpcUrl,
      chainId: devnet.state.l2.chainId,
      messageService: devnet.state.l2.messageService,
    },
    privateKey: devnet.state.accounts[ROLES.coordinator]!.privateKey,
  };
  s = devnetSigners(devnet.state, 10);
});
afterAll(async () => {
  s?.destroy();
  await devnet?.stop();
  await db?.close();
});

async function sendL1Messages(count: number) {
  const l1 = L1MessageService__factory.connect(devnet.state.l1.messageService, s.l1);
  for (let i = 0; i < count; i++)
    await mined(l1.sendMessage(s.account.address, 0n, '0x', { value: parseEther('0.001') }));
}

describe('devnet coordinator', () => {
  it('behavior: a second coordinator on the same database stands by, takes over when the first stops, and a restart anchors nothing twice', async () => {
    const l2 = L2MessageService__factory.connect(devnet.state.l2.messageService, s.l2Provider);
    const first = await startCoordinator({ common: common(), db: db.client, config, schema });
    await first.ready;
    await sendL1Messages(3);
    await waitFor('3 messages anchored', async () =>
      (await l2.lastAnchoredL1MessageNumber()) === 3n ? true : undefined,
    );

    const standby = await startCoordinator({ common: common(), db: db.client, config, schema });
    await first.stop();
    await sendL1Messages(2);
    await waitFor('the standby to anchor the next 2', async () =>
      (await l2.lastAnchoredL1MessageNumber()) === 5n ? true : undefined,
    );
    await standby.stop();

    // Every message was anchored exactly once (batches may split differently under load, never overlap).
    const events = await l2.queryFilter(l2.filters.RollingHashUpdated());
    const numbers = events.map((e) => e.args.messageNumber);
    expect(numbers.at(-1)).toBe(5n);
    expect(numbers).toEqual([...numbers].sort((a, b) => (a < b ? -1 : 1)));
    expect(new Set(numbers).size).toBe(numbers.length);
    const added = (await l2.queryFilter(l2.filters.L1L2MessageHashesAddedToInbox())).flatMap((e) => [
      ...e.args.messageHashes,
    ]);
    expect(added.length).toBe(5);
    expect(new Set(added).size).toBe(5);

    const scanned = await db.client.knex.withSchema(schema).table('l1_messages').count({ n: '*' }).first();
    expect(Number(scanned?.n)).toBe(5);
  });

  it('behavior: finalization covers every new L2 block once, with the block state root', async () => {
    const coordinator = await startCoordinator({ common: common(), db: db.client, config, schema });
    const l1 = L1MessageService__factory.connect(devnet.state.l1.messageService, s.l1Provider);
    const target = BigInt(await s.l2Provider.getBlockNumber());
    await waitFor('finalization past the current head', async () =>
      (await l1.currentL2BlockNumber()) >= target ? true : undefined,
    );
    await coordinator.stop();
    const finalized = await l1.queryFilter(l1.filters.BlocksFinalized());
    for (let i = 1; i < finalized.length; i++)
      expect(finalized[i]!.args.lastFinalizedBlock).toBe(finalized[i - 1]!.args.finalizedBlock);
    const last = finalized[finalized.length - 1]!;
    const block = await s.l2Provider.getBlock(Number(last.args.finalizedBlock));
    expect(last.args.finalStateRoot).toBe(block!.stateRoot);
  });
});
