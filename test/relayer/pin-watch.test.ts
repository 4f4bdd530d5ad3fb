import { afterAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/common/log.js';
import { createMetrics, gauge } from '../../src/common/metrics.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { ChainPinWatch, readIdentity } from '../../src/relayer/pin-watch.js';

/**
 * The running pin check alone (pin-watch.ts) against real anvils replaced on one port: a head within the
 * confirmations asks nothing, a head further back checks at once, a mismatch is logged once and set in the
 * metric, and the same chain back (same chain id and genesis timestamp: the same block 0) clears it.
 * test/relayer/chain-reset.test.ts covers the relayer around it (readiness, no claim, rows kept).
 */
const CHAIN_ID = 59_500 + (process.pid % 100);
const CONTRACT = '0x00000000000000000000000000000000000000c1';
const GENESIS = Math.floor(Date.now() / 1000) - 1_000;
let anvil: Anvil | undefined;
afterAll(async () => {
  await anvil?.stop();
});

/** Replaces the chain on `port` (0: a free one) by a fresh anvil with genesis time `timestamp`. */
async function chainAt(port: number, timestamp: number): Promise<Anvil> {
  await anvil?.stop();
  anvil = await startAnvil({ port, chainId: CHAIN_ID, timestamp });
  return anvil;
}

describe('the chain pin while running', () => {
  it(
    'behavior: a reset chain is found by the head going back or by check(); one error, metric 1; the same chain back clears it',
    { timeout: 120_000 },
    async () => {
      const first = await chainAt(0, GENESIS);
      const chain = { name: 'L1' as const, url: first.url, contract: CONTRACT };
      const pinned = await readIdentity(chain);
      const lines: string[] = [];
      const logger = createLogger({
        level: 'info',
        destination: new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) }),
      });
      const registry = createMetrics({ defaultMetrics: false });
      const chainPinMismatch = gauge(registry, 'relayer_chain_pin_mismatch', 'as in src/relayer/metrics.ts', ['chain']);
      const watch = new ChainPinWatch({
        pinned: [pinned],
        chains: [chain],
        logger,
        metrics: { chainPinMismatch },
        intervalMs: 100,
      });
      const metric = async () =>
        (await registry.getSingleMetricAsString('relayer_chain_pin_mismatch'))
          .split('\n')
          .find((l) => l.startsWith('relayer_chain_pin_mismatch{'));
      let stopped = 0;
      watch.whenMismatched(() => stopped++);
      expect(await watch.check()).toBe(true);
      expect(await metric()).toBe('relayer_chain_pin_mismatch{chain="L1"} 0');

      await chainAt(first.port, GENESIS + 500); // the reset: same port and chain id, another block 0
      // Heads the listener saw: up to 100, then 98 (within 4 confirmations: no check, so still "matching").
      expect(watch.sawHead('L1', 100, 4)).toBe(true);
      expect(watch.sawHead('L1', 98, 4)).toBe(true);
      expect(watch.mismatch).toBeUndefined();
      // 3 is 97 blocks back: checked at once.
      expect(await watch.sawHead('L1', 3, 4)).toBe(false);
      expect(watch.mismatch).toMatch(/^L1 genesis block hash stored 0x[0-9a-f]{64}, now 0x[0-9a-f]{64}$/);
      expect(watch.mismatch).toContain(pinned.genesisHash.toLowerCase());
      expect(await metric()).toBe('relayer_chain_pin_mismatch{chain="L1"} 1');
      expect(await watch.check()).toBe(false); // the next interval's check: no second error
      expect(stopped).toBe(1);
      const errors = lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 50);
      expect(errors).toHaveLength(1);
      expect((JSON.parse(errors[0]!) as { msg: string }).msg).toMatch(
        /^chain pin mismatch while running: L1 genesis block hash stored 0x[0-9a-f]{64}, now 0x[0-9a-f]{64}\. Every direction stopped claiming; nothing stored is changed\. If the chains were really reset, stop every relayer and run `l2stack relayer reset-chain-pin`$/,
      );
      expect(
        lines.some((l) => l.includes('L1 head went back from 100 to 3, more than L1_LISTENER_BLOCK_CONFIRMATION (4)')),
      ).toBe(true);

      // A node that does not answer changes nothing (readiness names it elsewhere).
      await anvil!.stop();
      anvil = undefined;
      expect(await watch.check()).toBe(false);
      expect(stopped).toBe(1);

      await chainAt(first.port, GENESIS); // the pinned chain again (a balancer pointed back): it clears
      expect(await watch.cleared(AbortSignal.timeout(60_000))).toBe(true);
      expect(watch.mismatch).toBeUndefined();
      expect(await metric()).toBe('relayer_chain_pin_mismatch{chain="L1"} 0');
      expect(lines.some((l) => l.includes('L1 matches its chain pin again: the directions start again'))).toBe(true);
    },
  );
});
