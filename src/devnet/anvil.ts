import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { BaseError } from '../common/errors.js';
import { PortInUseError } from '../common/http/server.js';
import type { Logger } from '../common/log.js';
import { chainCalls, keepPool } from './pool-keeper.js';
import { superviseChild } from './watchdog.js';

export interface AnvilOptions {
  /** 0 picks a free port. */
  port: number;
  chainId: number;
  /** Genesis timestamp (unix seconds). */
  timestamp?: number;
  /** Number of funded dev accounts (from anvil's well-known test mnemonic). */
  accounts?: number;
  /** Directory for a pid file of the chain, reaped by the next devnet on that directory if it outlives us. */
  pidDir?: string;
  /** Release transactions anvil parks for good (pool-keeper.ts) every this many ms; 0 turns it off. Default 500. */
  poolKeeperMs?: number;
  logger?: Logger;
}

export interface Anvil {
  url: string;
  port: number;
  chainId: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Where every devnet process listens: loopback only (the chains and the bundler hold funded keys). */
export const DEVNET_HOST = '127.0.0.1';

export class AnvilStartError extends BaseError {
  override name = 'AnvilStartError';
}

function anvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  try {
    return join(
      dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`)),
      'bin',
      process.platform === 'win32' ? 'anvil.exe' : 'anvil',
    );
  } catch (err) {
    throw new AnvilStartError(`anvil is not installed for ${process.platform}/${process.arch} (npm package ${pkg})`, {
      cause: err,
    });
  }
}

/** Resolves to a free TCP port (port 0), or checks that `port` is free, naming it when it is not. */
export function reservePort(host: string, port: number, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new PortInUseError(`${what}: port ${port} on ${host} is already in use`, { cause: err })
          : err,
      ),
    );
    probe.listen(port, host, () => {
      const actual = (probe.address() as { port: number }).port;
      probe.close(() => resolve(actual));
    });
  });
}

async function rpcReady(url: string, deadline: number, child: ChildProcess, stderr: () => string): Promise<void> {
  for (;;) {
    if (child.exitCode !== null)
      throw new AnvilStartError(`anvil exited with code ${child.exitCode}: ${stderr().trim().slice(-500)}`);
    try {
      await chainCalls(url, [['eth_chainId', []]]);
      return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new AnvilStartError(`anvil did not answer on ${url} within 15 s: ${stderr().trim().slice(-500)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts an anvil chain and waits until it answers JSON-RPC. With port 0 the free port is found before anvil binds
 * it, so another process may take it in between (seen in CI with many chains starting at once): such a start is
 * tried again on another free port, up to 3 times. A port asked for by number is never changed.
 */
export async function startAnvil(options: AnvilOptions): Promise<Anvil> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchAnvil(options);
    } catch (err) {
      const taken = err instanceof AnvilStartError && /Address already in use/.test(err.message);
      if (!taken || options.port !== 0 || attempt >= 3) throw err;
    }
  }
}

async function launchAnvil(options: AnvilOptions): Promise<Anvil> {
  const host = DEVNET_HOST;
  const port = await reservePort(host, options.port, `anvil (chain ${options.chainId})`);
  const args = [
    '--host',
    host,
    '--port',
    String(port),
    '--chain-id',
    String(options.chainId),
    '--accounts',
    String(options.accounts ?? 10),
    '--silent',
  ];
  if (options.timestamp !== undefined) args.push('--timestamp', String(options.timestamp));
  const child = spawn(anvilBinary(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const stopChild = superviseChild(child, { dir: options.pidDir, kind: 'anvil', port });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4_000);
  });
  const url = `http://${host}:${port}`;
  const keeper = new AbortController();
  const stop = async () => {
    keeper.abort();
    await stopChild();
  };
  try {
    await rpcReady(url, Date.now() + 15_000, child, () => stderr);
  } catch (err) {
    await stop();
    throw err;
  }
  if (options.poolKeeperMs !== 0) void keepPool(url, options.poolKeeperMs ?? 500, keeper.signal, options.logger);
  return { url, port, chainId: options.chainId, process: child, stop };
}
