import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DevnetState } from '../../src/devnet/state-file.js';
import { forward, portOf } from './devnet.js';
import { PODMAN_ENV, healthy, inspect, run, until, type Result } from './podman.js';
import { relayerEnv, writeEnvFile } from './relayer.js';
import { reservePort } from '../../src/devnet/anvil.js';

/**
 * docker/compose.yaml brought up by Debian's podman-compose (1.0) against a devnet, as an operator would with
 * a .env of their own. podman-compose 1.0 starts services in dependency order without waiting for health
 * checks or for migrate to finish; the compose file's restart policies cover that.
 */
export const SERVICES = ['postgres', 'migrate', 'token-api', 'rpc', 'relayer'] as const;

export interface ComposeStack {
  project: string;
  /** Published on 127.0.0.1. */
  ports: { 'token-api': number; rpc: number; relayer: number };
  compose(args: string[], timeoutMs: number): Promise<Result>;
  container(service: string): string;
  close(): Promise<void>;
}

/**
 * The stack's variables: the chains through forwarders the containers reach as host.containers.internal, the
 * relayer's configuration in an env file of its own (L2STACK_ENV_FILE), free ports to publish on.
 */
export async function composeStack(s: DevnetState, relayerKey: string): Promise<ComposeStack> {
  const project = `l2stackimage${process.pid}`;
  const l1 = await forward(portOf(s.l1.rpcUrl));
  const l2 = await forward(portOf(s.l2.upstreamRpcUrl));
  const host = 'host.containers.internal';
  const urls = { l1: `http://${host}:${l1.port}`, l2: `http://${host}:${l2.port}` };
  const envFile = writeEnvFile(join(mkdtempSync(join(tmpdir(), 'l2stack-compose-')), 'relayer.env'), {
    ...relayerEnv(s, urls, relayerKey),
    LOG_LEVEL: 'info',
  });
  const ports = {
    'token-api': await reservePort('127.0.0.1', 0, 'token API'),
    rpc: await reservePort('127.0.0.1', 0, 'RPC'),
    relayer: await reservePort('127.0.0.1', 0, 'relayer API'),
  };
  const env: NodeJS.ProcessEnv = {
    ...PODMAN_ENV,
    DATABASE_PASSWORD: randomBytes(16).toString('hex'),
    TOKEN_INDEXER_RPC_URL: urls.l2,
    RPC_UPSTREAM_URLS: urls.l2,
    NATIVE_TOKEN_ADDRESS: s.nativeToken,
    L2STACK_ENV_FILE: envFile,
    TOKEN_API_PUBLISH_PORT: String(ports['token-api']),
    RPC_PUBLISH_PORT: String(ports.rpc),
    RELAYER_API_PUBLISH_PORT: String(ports.relayer),
  };
  const compose = (args: string[], timeoutMs: number) =>
    run('podman-compose', ['-p', project, '-f', 'docker/compose.yaml', ...args], { env, timeoutMs, combined: true });
  return {
    project,
    ports,
    compose,
    container: (service) => `${project}_${service}_1`,
    close: async () => {
      await compose(['down', '--volumes'], 120_000).catch(() => undefined);
      await l1.close();
      await l2.close();
    },
  };
}

interface ContainerState {
  State: { Status: string; ExitCode: number; Running: boolean };
}

/**
 * Waits until every service with a HEALTHCHECK passes it (run on demand: podman has no systemd timers here)
 * and migrate has exited 0; returns the seconds each took from `since`. Fails naming the services that did not.
 */
export async function waitHealthy(stack: ComposeStack, since: number, ms: number): Promise<Record<string, number>> {
  const took: Record<string, number> = {};
  const pending = new Set<string>(SERVICES);
  await until(
    `services healthy`,
    async () => {
      for (const service of [...pending]) {
        const name = stack.container(service);
        const ok = service === 'migrate' ? await migrated(name) : await healthy(name);
        if (ok) {
          pending.delete(service);
          took[service] = Math.round((Date.now() - since) / 100) / 10;
        }
      }
      if (pending.size > 0) throw new Error(`still not healthy: ${[...pending].join(', ')}`);
      return true;
    },
    ms,
    2_000,
  );
  return took;
}

async function migrated(name: string): Promise<boolean> {
  const c = await inspect<ContainerState>('container', name);
  return c.State.Status === 'exited' && c.State.ExitCode === 0;
}

/**
 * podman-compose 1.0 prints each podman command it runs, its output, then "exit code: N", and carries on
 * after a failure: the commands that failed, with their output, for a failure message.
 */
export function failedCommands(output: string): string {
  const failed: string[] = [];
  let block: string[] = [];
  for (const line of output.split('\n')) {
    const exit = /^exit code: (\d+)/.exec(line);
    if (!exit) {
      if (/^podman /.test(line)) block = [];
      block.push(line.slice(0, 400));
      continue;
    }
    if (exit[1] !== '0') failed.push([...block.slice(-8), line].join('\n'));
    block = [];
  }
  return failed.join('\n') || '(none)';
}
