import { Wallet, parseUnits, type JsonRpcProvider } from 'ethers';
import { startAnvil, type Anvil } from './anvil.js';
import { devAccounts, ROLES, ACCOUNT_COUNT, type DevAccount } from './accounts.js';
import { deployClaimForwarders, deployDex, deployMessageServices, deployTokens, type Deployment } from './deploy.js';
import { generateHistory, runTraffic } from './scenario.js';
import { startBlockTicker } from './block-ticker.js';
import { deployAccountAbstraction } from './account-abstraction/deploy.js';
import {
  ALTO_VENDOR_PREFIX,
  altoInstalled,
  deployBundlerHelpers,
  startBundler,
  type Bundler,
} from './account-abstraction/bundler.js';
import {
  startCoordinator,
  DEFAULT_COORDINATOR,
  type Coordinator,
  type CoordinatorConfig,
  type StateRootSource,
} from './coordinator/index.js';
import type { DevnetState } from './state-file.js';
import { createProvider } from '../common/chain/provider.js';
import type { DbClient } from '../common/db/client.js';
import type { Common } from '../common/kernel.js';
import type { Logger } from '../common/log.js';

/** How often the devnet mines an empty block on each chain unless told otherwise (DevnetOptions.blockTimeMs). */
export const DEVNET_BLOCK_TIME_MS = 1_000;

export interface DevnetOptions {
  /** 0 = a free port. */
  l1Port?: number;
  l2Port?: number;
  /**
   * An empty block is mined this often on each chain (transactions are mined at once regardless); default
   * DEVNET_BLOCK_TIME_MS.
   */
  blockTimeMs?: number;
  /** Hours of generated L2 history before "now" (0 = none). */
  historyHours?: number;
  traffic?: boolean;
  /** false = no coordinator (tests of the coordinator itself start their own). */
  coordinator?: Partial<Omit<CoordinatorConfig, 'l1' | 'l2' | 'privateKey'>> | false;
  stateRoots?: StateRootSource;
  /** Database schema of the coordinator's progress (default `devnet`). */
  coordinatorSchema?: string;
  /** Where each chain's pid file goes (the state file's directory), so the next start reaps orphans. */
  pidDir?: string;
  /**
   * Run an ERC-4337 bundler (Alto) against L2 (`l2stack devnet`/`dev` do; default: none, since it takes
   * seconds to start and most tests do not need it). The EntryPoint and account factory are deployed either way.
   */
  bundler?: boolean;
  /**
   * Called (not awaited) once both message services are deployed, before tokens and history: `l2stack dev`
   * starts the state manager here, so it ingests the generated history while it is made.
   */
  onMessageServices?: (chains: DevnetChains) => void;
}

/** What a follower of both chains needs, known once the message services are deployed. */
export interface DevnetChains {
  l1: { rpcUrl: string; messageService: string };
  l2: { upstreamRpcUrl: string };
  accounts: { address: string }[];
}

export interface Devnet {
  state: DevnetState;
  deployment: Deployment;
  l1: Anvil;
  l2: Anvil;
  coordinator?: Coordinator;
  bundler?: Bundler;
  stop(): Promise<void>;
}

const CHAIN_IDS = { l1: 31337, l2: 31338 };

const EXCLUDED_WALLETS = [
  { role: 'treasury', label: 'Treasury', status: 'active', amount: 150_000_000n },
  { role: 'vesting', label: 'Team vesting', status: 'active', amount: 200_000_000n },
  { role: 'ecosystem', label: 'Ecosystem fund', status: 'inactive', amount: 50_000_000n },
] as const;

async function jumpToNow(provider: JsonRpcProvider): Promise<void> {
  const latest = await provider.getBlock('latest');
  const now = Math.max(Math.floor(Date.now() / 1000), (latest?.timestamp ?? 0) + 1);
  await provider.send('evm_setNextBlockTimestamp', [now]);
  await provider.send('evm_mine', []);
}

/** What every step of one start shares. */
interface Start {
  options: DevnetOptions;
  accounts: DevAccount[];
  wallet: (role: keyof typeof ROLES, provider: JsonRpcProvider) => Wallet;
  logger: Logger;
  /** Teardown of whatever started so far, run last step first. */
  cleanups: (() => Promise<void>)[];
}

/** Both anvil chains, started together; whichever started is registered for teardown even if the other failed. */
async function startChains(s: Start, genesis: number) {
  const base = { timestamp: genesis, pidDir: s.options.pidDir, logger: s.logger, accounts: ACCOUNT_COUNT };
  const results = await Promise.allSettled([
    startAnvil({ ...base, port: s.options.l1Port ?? 0, chainId: CHAIN_IDS.l1 }),
    startAnvil({ ...base, port: s.options.l2Port ?? 0, chainId: CHAIN_IDS.l2 }),
  ]);
  for (const r of results) if (r.status === 'fulfilled') s.cleanups.push(() => r.value.stop());
  const [l1, l2] = results;
  if (l1.status === 'rejected') throw l1.reason;
  if (l2.status === 'rejected') throw l2.reason;
  return { l1: l1.value, l2: l2.value };
}

/**
 * The ERC-4337 contracts, from the bundler's own utility account through CREATE2, alongside the other
 * deployments (no other account's nonce moves, so no other address does), and the bundler (seconds to load)
 * started as soon as they are there. History waits for these transactions: it sets block timestamps one by one.
 */
function startAccountAbstraction(l2: Anvil, l2Provider: JsonRpcProvider, s: Start) {
  const { options, logger } = s;
  const utility = s.wallet('bundlerUtility', l2Provider);
  const aaDeploying = deployAccountAbstraction(utility);
  let bundlerStarting: Promise<Bundler> | undefined;
  let bundlerContracts: Promise<unknown> = aaDeploying;
  if (options.bundler && !altoInstalled()) {
    logger.warn(
      "ERC-4337 bundler not started: @pimlico/alto is not installed, so the endpoint's bundler methods answer -32601 (install it, or set RPC_BUNDLER_URL to a bundler of yours)",
    );
  } else if (options.bundler) {
    const bundlerStop = new AbortController();
    const helpersDeploying = aaDeploying.then(() => deployBundlerHelpers(utility));
    bundlerContracts = helpersDeploying;
    bundlerStarting = Promise.all([aaDeploying, helpersDeploying]).then(([aa, helpers]) =>
      startBundler({
        rpcUrl: l2.url,
        entryPoint: aa.entryPoint,
        helpers,
        executorPrivateKey: s.accounts[ROLES.bundlerExecutor]!.privateKey,
        utilityPrivateKey: s.accounts[ROLES.bundlerUtility]!.privateKey,
        blockTimeMs: Math.min(options.blockTimeMs ?? DEVNET_BLOCK_TIME_MS, DEVNET_BLOCK_TIME_MS),
        pidDir: options.pidDir,
        logger: logger.child({ module: 'bundler' }),
        signal: bundlerStop.signal,
      }),
    );
    // Registered at once: a failure further on must neither wait for its start nor leave it running.
    s.cleanups.push(async () => {
      bundlerStop.abort();
      await (await bundlerStarting!.catch(() => undefined))?.stop();
    });
  }
  // Awaited later; until then a rejection must not count as unhandled.
  for (const p of [aaDeploying, bundlerContracts, bundlerStarting]) p?.catch(() => undefined);
  return { aaDeploying, bundlerContracts, bundlerStarting };
}

/**
 * Our contracts: L1 lives in the present; L2 gets the message services, tokens and DEX at its genesis time,
 * then `historyHours` of generated trading, then the claim forwarders last (so every block and address
 * before them is what it was before they existed).
 */
async function deployContracts(
  chains: { l1: Anvil; l2: Anvil; l1Provider: JsonRpcProvider; l2Provider: JsonRpcProvider },
  s: Start,
  times: { genesis: number; started: number; historyHours: number },
  waitFor: () => Promise<unknown>,
) {
  const { l1, l2, l1Provider, l2Provider } = chains;
  const { accounts, wallet } = s;
  const l1Deployer = wallet('deployer', l1Provider);
  const l2Deployer = wallet('deployer', l2Provider);
  await jumpToNow(l1Provider);
  const l1StartBlock = await l1Provider.getBlockNumber();
  const services = await deployMessageServices({
    l1Deployer,
    l2Deployer,
    coordinator: accounts[ROLES.coordinator]!.address,
  });
  s.options.onMessageServices?.({
    l1: { rpcUrl: l1.url, messageService: services.l1MessageService },
    l2: { upstreamRpcUrl: l2.url },
    accounts,
  });
  const tokens = await deployTokens(l2Deployer);
  const dex = await deployDex(l2Deployer, tokens);
  const deployment: Deployment = { ...services, tokens, ...dex, l1ClaimForwarder: '', l2ClaimForwarder: '' };
  const excluded = EXCLUDED_WALLETS.map((w) => ({ ...w, address: accounts[ROLES[w.role]]!.address }));
  await waitFor();
  if (times.historyHours > 0) {
    await generateHistory({
      l2: l2Provider,
      deployer: l2Deployer,
      trader: wallet('trader', l2Provider),
      traders: (['trader', 'traffic', 'user', 'user2'] as const).map((role) => wallet(role, l2Provider)),
      deployment,
      excludedWallets: excluded.map((w) => ({ address: w.address, amount: parseUnits(w.amount.toString(), 18) })),
      from: times.genesis + 300,
      to: times.started - 60,
      logger: s.logger,
    });
  }
  await jumpToNow(l2Provider);
  Object.assign(deployment, await deployClaimForwarders({ l1Deployer, l2Deployer, ...services }));
  return { deployment, excluded, l1StartBlock };
}

/** Live block production on both chains. */
function startTickers(l1: Anvil, l2: Anvil, s: Start) {
  const ticker = new AbortController();
  const blockTime = s.options.blockTimeMs ?? DEVNET_BLOCK_TIME_MS;
  const tickers = Promise.all([
    startBlockTicker(l1.url, blockTime, ticker.signal),
    startBlockTicker(l2.url, blockTime, ticker.signal),
  ]);
  s.cleanups.splice(s.cleanups.length - 1, 0, async () => {
    ticker.abort();
    await tickers;
  });
}

/** The coordinator, unless `options.coordinator` is false; the database is awaited only here. */
async function startCoordinatorOn(
  chains: { l1: Anvil; l2: Anvil; deployment: Deployment; l1StartBlock: number },
  common: Common,
  db: DbClient | Promise<DbClient>,
  s: Start,
): Promise<Coordinator | undefined> {
  const { l1, l2, deployment, l1StartBlock } = chains;
  if (s.options.coordinator === false) return undefined;
  const coordinator = await startCoordinator({
    common,
    db: await db,
    stateRoots: s.options.stateRoots,
    schema: s.options.coordinatorSchema,
    config: {
      ...DEFAULT_COORDINATOR,
      ...s.options.coordinator,
      l1StartBlock,
      l1: { rpcUrl: l1.url, chainId: CHAIN_IDS.l1, messageService: deployment.l1MessageService },
      l2: { rpcUrl: l2.url, chainId: CHAIN_IDS.l2, messageService: deployment.l2MessageService },
      privateKey: s.accounts[ROLES.coordinator]!.privateKey,
    },
  });
  s.cleanups.push(() => coordinator.stop());
  return coordinator;
}

/** `options.traffic`: messages and swaps every few seconds, on providers of its own. */
function startTrafficOn(l1: Anvil, l2: Anvil, deployment: Deployment, s: Start) {
  const traffic = new AbortController();
  const trafficL1 = createProvider(l1.url, CHAIN_IDS.l1, { pollingInterval: 100 });
  const trafficL2 = createProvider(l2.url, CHAIN_IDS.l2, { pollingInterval: 100 });
  const running = runTraffic({
    l1Sender: s.wallet('traffic', trafficL1),
    l2Sender: s.wallet('traffic', trafficL2),
    deployment,
    intervalMs: 3_000,
    signal: traffic.signal,
    logger: s.logger,
  });
  s.cleanups.push(async () => {
    traffic.abort();
    await running;
    trafficL1.destroy();
    trafficL2.destroy();
  });
}

/** What `l2stack devnet` writes to its state file (services are added by `l2stack dev`). */
function describeDevnet(
  parts: {
    l1: Anvil;
    l2: Anvil;
    deployment: Deployment;
    aa: { entryPoint: string; accountFactory: string };
    bundler?: Bundler;
    excluded: readonly { address: string; label: string; status: string }[];
  },
  s: Start,
  genesis: number,
): DevnetState {
  const { l1, l2, deployment, aa, bundler, excluded } = parts;
  const tokens = deployment.tokens;
  const native = Object.values(tokens).find((t) => t.spec.kind === 'native')!;
  return {
    l1: { chainId: CHAIN_IDS.l1, rpcUrl: l1.url, messageService: deployment.l1MessageService },
    l2: { chainId: CHAIN_IDS.l2, rpcUrl: l2.url, upstreamRpcUrl: l2.url, messageService: deployment.l2MessageService },
    nativeToken: native.address,
    stablecoin: tokens.USDS!.address,
    tokens: Object.values(tokens).map((t) => ({
      symbol: t.spec.symbol,
      name: t.spec.name,
      address: t.address,
      decimals: t.spec.decimals,
    })),
    dex: { factory: deployment.dexFactory, router: deployment.dexRouter, pairs: deployment.pairs },
    callRecorder: { l1: deployment.l1CallRecorder, l2: deployment.l2CallRecorder },
    claimForwarder: { l1: deployment.l1ClaimForwarder, l2: deployment.l2ClaimForwarder },
    entryPoint: aa.entryPoint,
    accountFactory: aa.accountFactory,
    ...(bundler ? { bundler: { url: bundler.url, vendorPrefix: ALTO_VENDOR_PREFIX } } : {}),
    excludedWallets: excluded.map((w) => ({ address: w.address, label: w.label, status: w.status })),
    accounts: s.accounts,
    messageTreeDepth: (s.options.coordinator || undefined)?.treeDepth ?? DEFAULT_COORDINATOR.treeDepth,
    genesisTimestamp: genesis,
    services: {},
  };
}

/**
 * Starts a whole local L1 + L2: two anvil chains with genesis about `historyHours` + 10 min in the past,
 * the message services, tokens and DEX on L2, a generated day of trading, then live block production and
 * the coordinator. On any failure everything started so far is stopped before the error propagates.
 */
export async function startDevnet({
  common,
  db,
  options = {},
}: {
  common: Common;
  /** May still be opening (embedded PGlite takes seconds): only the coordinator needs it, at the end. */
  db: DbClient | Promise<DbClient>;
  options?: DevnetOptions;
}): Promise<Devnet> {
  const logger = common.logger.child({ module: 'devnet' });
  const historyHours = options.historyHours ?? 26;
  const started = Math.floor(Date.now() / 1000);
  const genesis = started - historyHours * 3600 - 600;
  const accounts = devAccounts();
  const s: Start = {
    options,
    accounts,
    wallet: (role, provider) => new Wallet(accounts[ROLES[role]]!.privateKey, provider),
    logger,
    cleanups: [],
  };
  const stopAll = async () => {
    for (const fn of s.cleanups.splice(0).reverse())
      await fn().catch((err: unknown) => logger.warn({ err }, 'devnet teardown step failed'));
  };

  try {
    const { l1, l2 } = await startChains(s, genesis);
    logger.info({ l1: l1.url, l2: l2.url }, 'chains started');
    const l1Provider = createProvider(l1.url, CHAIN_IDS.l1, { pollingInterval: 10 });
    const l2Provider = createProvider(l2.url, CHAIN_IDS.l2, { pollingInterval: 10 });
    s.cleanups.push(async () => {
      l1Provider.destroy();
      l2Provider.destroy();
    });
    const { aaDeploying, bundlerContracts, bundlerStarting } = startAccountAbstraction(l2, l2Provider, s);
    const { deployment, excluded, l1StartBlock } = await deployContracts(
      { l1, l2, l1Provider, l2Provider },
      s,
      { genesis, started, historyHours },
      () => Promise.all([aaDeploying, bundlerContracts]),
    );
    const aa = await aaDeploying;
    startTickers(l1, l2, s);
    const bundler = await bundlerStarting;
    const coordinator = await startCoordinatorOn({ l1, l2, deployment, l1StartBlock }, common, db, s);
    if (options.traffic) startTrafficOn(l1, l2, deployment, s);

    const state = describeDevnet({ l1, l2, deployment, aa, bundler, excluded }, s, genesis);
    const stop = async () => {
      await stopAll();
      logger.info('devnet stopped');
    };
    common.shutdown.add('devnet', stop);
    return { state, deployment, l1, l2, coordinator, bundler, stop };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
