import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/log.js';
import { createMetrics } from '../../src/common/metrics.js';
import { Shutdown } from '../../src/common/shutdown.js';
import { loadRelayerConfig, STANDING_BY, startRelayer, type Relayer } from '../../src/relayer/index.js';
import { useClaimChain, type ClaimChain } from './claim-chain.js';
import { waitFor } from '../helpers/chain.js';

/**
 * An admin action sent to the standby of an HA pair (two relayers on one database, L1→L2 on a real anvil): the
 * standby only writes the database; the active instance picks the message up through its change feed and claims
 * it. The history tells who did what: the admin, then the active instance.
 */
const TOKEN = 'ha-admin-token-'.padEnd(40, 'x');
let c: ClaimChain;
const fixture = useClaimChain();
const relayers: Relayer[] = [];
const logger = createLogger({ level: 'silent' });
beforeAll(() => {
  c = fixture.chain;
});
afterAll(async () => {
  for (const r of relayers) await r.stop();
});

const until = (what: string, check: () => Promise<boolean>, ms = 30_000) => waitFor(what, check, ms, 100);

async function start(): Promise<Relayer> {
  const address = await c.service.getAddress();
  const config = loadRelayerConfig({
    L1_L2_AUTO_CLAIM_ENABLED: 'true',
    L2_L1_AUTO_CLAIM_ENABLED: 'false',
    DB_CLEANER_ENABLED: 'false',
    L1_L2_EOA_ENABLED: 'true',
    L1_CONTRACT_ADDRESS: address,
    L2_CONTRACT_ADDRESS: address,
    L1_RPC_URL: c.anvil.url,
    L2_RPC_URL: c.anvil.url,
    L1_SIGNER_TYPE: 'private-key',
    L2_SIGNER_TYPE: 'private-key',
    L2_SIGNER_PRIVATE_KEY: c.relayerKey,
    L1_LISTENER_INTERVAL: '200',
    L2_LISTENER_INTERVAL: '200',
    L2_LISTENER_RECEIPT_POLLING_INTERVAL: '200',
    API_ADMIN_TOKEN: TOKEN,
  });
  const r = await startRelayer({
    common: { logger, metrics: createMetrics({ defaultMetrics: false }), shutdown: new Shutdown(logger) },
    db: fixture.db.client,
    config: { ...config, api: { ...config.api, port: 0 } },
    schema: c.repo.schema,
    validateResponses: true,
  });
  relayers.push(r);
  return r;
}

const listener = async (r: Relayer) =>
  (
    (await (await fetch(`${r.url}/health/ready`)).json()) as {
      checks: { name: string; ok: boolean; detail?: string }[];
    }
  ).checks.find((k) => k.name === 'listener.L1_TO_L2');

describe('admin actions across an HA pair', () => {
  it(
    'behavior: a retry sent to the standby is written once; the active instance claims the message, and the history names the admin then the active instance',
    { timeout: 90_000 },
    async () => {
      const [m] = await c.addMessages(1);
      await c.setStatus(m!.id, 'NEEDS_MANUAL_INTERVENTION');
      const active = await start();
      await until(
        'the first relayer to lead',
        async () => (await listener(active))?.ok === true && (await listener(active))?.detail === undefined,
      );
      const standby = await start();
      await until('the second relayer to stand by', async () => (await listener(standby))?.detail === STANDING_BY);

      const res = await fetch(`${standby.url}/messages/${m!.message_hash}/retry`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect([res.status, ((await res.json()) as { changed: boolean }).changed]).toEqual([200, true]);
      await until('the message to be claimed', async () => (await c.row(m!.id)).status === 'CLAIMED_SUCCESS');

      const history = (await (await fetch(`${standby.url}/messages/${m!.message_hash}/history`)).json()) as {
        history: { from: string | null; to: string; actor: string; claimTxHash: string | null }[];
      };
      const lines = history.history.map((h) => [h.from, h.to, h.actor]);
      expect(lines.slice(1)).toEqual([
        ['NEEDS_MANUAL_INTERVENTION', 'TRANSACTION_SIZE_COMPUTED', 'admin'],
        ['TRANSACTION_SIZE_COMPUTED', 'ANCHORED', active.instance],
        ['ANCHORED', 'PENDING', active.instance],
        ['PENDING', 'CLAIMED_SUCCESS', active.instance],
      ]);
      expect(active.instance).not.toBe(standby.instance);
      expect(history.history.at(-1)!.claimTxHash).toBe((await c.row(m!.id)).claim_tx_hash);
    },
  );
});
