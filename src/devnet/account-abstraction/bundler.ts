import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Signer } from 'ethers';
import { BaseError } from '../../common/errors.js';
import { readProcessEnv } from '../../common/config/process-env.js';
import type { Logger } from '../../common/log.js';
import { DEVNET_HOST, reservePort } from '../anvil.js';
import { superviseChild } from '../watchdog.js';
import { deployDeterministic } from './deploy.js';

/**
 * Alto's own name for the vendor_ methods: `vendor_getUserOperationGasPrice` is its `pimlico_getUserOperationGasPrice`.
 */
export const ALTO_VENDOR_PREFIX = 'pimlico_';

export class BundlerStartError extends BaseError {
  override name = 'BundlerStartError';
}

/** The directory of the installed @pimlico/alto package (its CLI and its simulation contracts). */
export function altoPackageDir(): string {
  try {
    // Its exports map has only ".", which is esm/index.js.
    return dirname(dirname(createRequire(import.meta.url).resolve('@pimlico/alto')));
  } catch (err) {
    throw new BundlerStartError('the ERC-4337 bundler Alto is not installed (npm package @pimlico/alto)', {
      cause: err,
    });
  }
}

/** False when @pimlico/alto is not installed (an install without dev/optional dependencies). */
export function altoInstalled(): boolean {
  try {
    altoPackageDir();
    return true;
  } catch {
    return false;
  }
}

export interface BundlerHelpers {
  /** Alto's EntryPointSimulations for v0.7 (run inside the EntryPoint through delegateAndRevert). */
  entryPointSimulationsV7: string;
  /** Alto's PimlicoSimulations (gas estimation and simulation entry point). */
  pimlicoSimulations: string;
}

/**
 * Deploys Alto's simulation contracts (its own compiled artifacts, shipped in its package) through CREATE2
 * before it starts, so it is told their addresses and sends no transaction of its own at start-up: left to
 * itself it would, while the devnet is still writing history with chosen block timestamps.
 */
export async function deployBundlerHelpers(signer: Signer): Promise<BundlerHelpers> {
  const dir = altoPackageDir();
  /** Alto's compiled `contract` of `source`.sol, deployed through CREATE2. */
  const deploy = (source: string, contract: string) => {
    const file = join(dir, 'esm', 'contracts', `${source}.sol`, `${contract}.json`);
    const { bytecode } = JSON.parse(readFileSync(file, 'utf8')) as { bytecode: { object: string } };
    return deployDeterministic(signer, bytecode.object, `Alto ${contract}`);
  };
  return {
    entryPointSimulationsV7: await deploy('EntryPointSimulations', 'EntryPointSimulations07'),
    pimlicoSimulations: await deploy('PimlicoSimulations', 'PimlicoSimulations'),
  };
}

/**
 * Alto always listens on 0.0.0.0 (no option for it). This runs its CLI with `net.Server#listen` asked for
 * the configured host instead, so the bundler, which holds funded keys, is on loopback like every other
 * devnet process. process.argv stays [node, alto.js, ...flags], as Alto's argument parser expects.
 */
const LAUNCHER = `
const net = require('node:net');
const host = process.env.L2STACK_BUNDLER_HOST;
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (host && args[0] && typeof args[0] === 'object' && args[0].host === '0.0.0.0') args[0] = { ...args[0], host };
  return listen.apply(this, args);
};
import(require('node:url').pathToFileURL(process.argv[1]).href).catch((err) => { console.error(err); process.exit(1); });
`;

export interface BundlerOptions {
  /** The L2 node the bundler reads and sends bundles to. */
  rpcUrl: string;
  entryPoint: string;
  helpers: BundlerHelpers;
  executorPrivateKey: string;
  utilityPrivateKey: string;
  /** The chain's block interval: Alto polls for receipts at a quarter of it. */
  blockTimeMs?: number;
  /** Directory for the bundler's pid file, reaped by the next devnet on that directory if it outlives us. */
  pidDir?: string;
  logger?: Logger;
  /** Aborting stops the bundler, also while it is still starting (the start then fails). */
  signal?: AbortSignal;
}

export interface Bundler {
  url: string;
  stop(): Promise<void>;
}

async function answers(url: string, entryPoint: string): Promise<boolean> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_supportedEntryPoints","params":[]}',
    });
    if (!res.ok) return false;
    const body = (await res.json()) as { result?: string[] };
    return body.result?.some((a) => a.toLowerCase() === entryPoint.toLowerCase()) ?? false;
  } catch {
    return false;
  }
}

function altoArgs(dir: string, port: number, o: BundlerOptions): string[] {
  const flags = {
    port: String(port),
    'rpc-url': o.rpcUrl,
    entrypoints: o.entryPoint,
    'deploy-simulations-contract': 'false',
    'entrypoint-simulation-contract-v7': o.helpers.entryPointSimulationsV7,
    'pimlico-simulation-contract': o.helpers.pimlicoSimulations,
    // Safe mode needs the ERC-7562 JavaScript tracer, which anvil does not have.
    'safe-mode': 'false',
    'block-time': String(o.blockTimeMs ?? 1_000),
    'utility-wallet-monitor': 'false',
    'log-level': 'warn',
  };
  return [join(dir, 'esm', 'cli', 'alto.js'), ...Object.entries(flags).flatMap(([k, v]) => [`--${k}`, v]), '--json'];
}

/** Our environment minus whatever would reconfigure Alto behind our back (ALTO_* flags, error reporting). */
function altoEnv(host: string, o: BundlerOptions): Record<string, string | undefined> {
  const inherited = Object.entries(readProcessEnv()).filter(([k]) => !/^(ALTO_|SENTRY_|DOTENV_CONFIG_PATH$)/.test(k));
  return {
    ...Object.fromEntries(inherited),
    L2STACK_BUNDLER_HOST: host,
    ALTO_EXECUTOR_PRIVATE_KEYS: o.executorPrivateKey,
    ALTO_UTILITY_PRIVATE_KEY: o.utilityPrivateKey,
  };
}

/** How long Alto may take to answer (its start-up loads many modules: seconds on a busy machine). */
const START_TIMEOUT_MS = 90_000;

async function entryPointListed(url: string, child: ChildProcess, o: BundlerOptions, output: () => string) {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null)
      throw new BundlerStartError(`Alto exited with code ${child.exitCode}: ${output().trim().slice(-800)}`);
    if (await answers(url, o.entryPoint)) return;
    if (Date.now() > deadline)
      throw new BundlerStartError(
        `Alto did not list the EntryPoint on ${url} within ${START_TIMEOUT_MS / 1000} s: ${output().trim().slice(-800)}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Starts Alto (ERC-4337 bundler, npm @pimlico/alto) against the L2 and waits until it lists the EntryPoint.
 * Like anvil it dies with this process (watchdog, pid file). Its keys go through its environment (ALTO_*),
 * not its command line. It loads a `.env` of its working directory, so it runs in its own package directory.
 */
export async function startBundler(o: BundlerOptions): Promise<Bundler> {
  const host = DEVNET_HOST;
  const port = await reservePort(host, 0, 'ERC-4337 bundler (Alto)');
  const dir = altoPackageDir();
  const child = spawn(process.execPath, ['-e', LAUNCHER, ...altoArgs(dir, port, o)], {
    cwd: dir,
    env: altoEnv(host, o),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stop = superviseChild(child, { dir: o.pidDir, kind: 'bundler', port });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-4_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  o.signal?.addEventListener('abort', () => void stop(), { once: true });
  const url = `http://${host}:${port}`;
  try {
    await entryPointListed(url, child, o, () => output);
  } catch (err) {
    await stop();
    throw err;
  }
  // After start-up only its complaints are worth keeping, in our log under our module name.
  child.stdout?.off('data', keep);
  child.stdout?.on('data', (d: Buffer) =>
    o.logger?.warn({ bundler: d.toString().trim().slice(0, 2_000) }, 'bundler (Alto) says'),
  );
  o.logger?.info({ url, entryPoint: o.entryPoint }, 'bundler (Alto) started');
  return { url, stop };
}
