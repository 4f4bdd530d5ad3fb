import type { Registry } from 'prom-client';
import { sleep } from '../common/shutdown.js';
import { connectChain, type Chain } from './chain.js';
import type { ChainConfig } from './chain-config.js';
import { checkChainPin, ChainPinMismatchError, type ChainIdentity } from './db/chain-pin.js';
import { directionSigners, relayerLoop, runDirection, type RelayerRun } from './direction.js';
import { ChainPinWatch, genesisHash } from './pin-watch.js';

/** The chains a relayer connected to (destroyed on stop) and how to report that it cannot run at all. */
export interface BootHooks {
  registry: Registry;
  chains: { l1?: Chain; l2?: Chain };
  fail(err: Error): void;
}

/**
 * The pipeline of every enabled direction, in the background of the API: both chains connected (retried until
 * they answer), the database checked against their identities (pinned on the first run), then each direction
 * run under its own leadership lock. Resolves once every direction has stopped.
 */
export async function bootDirections(run: RelayerRun, hooks: BootHooks): Promise<void> {
  if (run.enabled.length === 0) return;
  const { config, logger, signal } = run;
  const { pinCheckIntervalMs } = config.operations;
  const connect = (name: Chain['name'], c: ChainConfig) =>
    connectChain({ name, url: c.rpcUrl, contract: c.contractAddress, metrics: hooks.registry, logger }, signal);
  const [l1, l2] = await Promise.all([connect('L1', config.l1), connect('L2', config.l2)]);
  if (!l1 || !l2) return;
  Object.assign(hooks.chains, { l1, l2 });
  // Before any direction starts: a database of other chains holds signed claims, nonces and cursors that must
  // never reach these chains (a reset testnet keeps its contract addresses and often its chain id).
  const identitiesRead = Promise.all([l1, l2].map((c) => chainIdentity(run, c)));
  // The signers are made while the chains answer (their requests are written first, in this turn's ticks): a
  // local key's first use builds the curve's signing tables, ~0.1 s of CPU that was on the way to the first claim,
  // and a remote signer or KMS is asked for its address over the network. A failure is reported by its direction.
  await new Promise((resolve) => setImmediate(resolve));
  const signers = new Map(run.enabled.map((d) => [d, directionSigners(run.config, d)]));
  for (const made of signers.values()) made.catch(() => undefined);
  const identities = await identitiesRead;
  if (identities.some((i) => i === undefined)) return;
  if (!(await pinChains(run, identities as ChainIdentity[], hooks.fail))) return;
  // From here on the pin is read again while running (pin-watch.ts): a chain reset under us stops the directions.
  const pin = (run.pin = new ChainPinWatch({
    pinned: identities as ChainIdentity[],
    chains: [l1, l2],
    logger,
    metrics: run.metrics,
    intervalMs: pinCheckIntervalMs,
  }));
  const pinLoop = relayerLoop(run, 'chain-pin', pinCheckIntervalMs, async () => (await pin.check(), false));
  await Promise.all([
    pinLoop,
    ...run.enabled.map((d) =>
      runDirection(run, d, l1, l2, signers.get(d)).catch((err) => {
        run.health[d]!.state = `stopped: ${(err as Error).message}`;
        logger.error({ err, direction: d }, 'direction stopped');
      }),
    ),
  ]);
}

/** The chain's id, its block 0 hash and our contract there; read until the node answers (or we stop). */
async function chainIdentity(run: RelayerRun, c: Chain): Promise<ChainIdentity | undefined> {
  for (let warned = false; ; warned = true) {
    try {
      const genesis = await genesisHash(c.url);
      return { layer: c.name, chainId: c.chainId.toString(), genesisHash: genesis, contractAddress: c.contract };
    } catch (err) {
      if (!warned)
        run.logger.warn({ chain: c.name, err: (err as Error).message }, 'reading the genesis block failed; retrying');
      if (!(await sleep(2_000, run.signal))) return undefined;
    }
  }
}

/**
 * Checks (or, on the first run, records) the chains the database belongs to; false when the relayer must not
 * go on (stopping, or pinned to other chains: then `fail` is called once, after one error line). The database
 * may be unreachable right now: tried again until it answers (or we stop), like every loop.
 */
async function pinChains(run: RelayerRun, identities: ChainIdentity[], fail: (err: Error) => void): Promise<boolean> {
  for (let warned = false; ; warned = true) {
    try {
      const { pinnedNow } = await checkChainPin(run.repo, identities);
      if (pinnedNow.length > 0)
        run.logger.info({ pins: identities }, `database pinned to these chains (${pinnedNow.join(', ')})`);
      return true;
    } catch (err) {
      if (err instanceof ChainPinMismatchError) {
        // One error line, whoever started us (the command exits 1 on `fatal`; `l2stack dev` keeps the rest
        // running and readiness names it).
        run.logger.error(err.message);
        for (const h of Object.values(run.health)) h.state = `stopped: ${err.message}`;
        fail(err);
        return false;
      }
      if (!warned) run.logger.warn({ err: (err as Error).message }, 'checking the chain pin failed; retrying');
      if (!(await sleep(2_000, run.signal))) return false;
    }
  }
}
