import type { DevnetState } from './state-file.js';
import { DEVNET_HOST, reservePort } from './anvil.js';
import { reapOrphanChains } from './orphans.js';
import type { Logger } from '../common/log.js';
import { tokenApiService } from './services/token-api.js';
import { rpcService } from './services/rpc.js';
import { relayerService } from './services/relayer.js';
import type { StackContext, StackService } from './services/service.js';

/** Services join this list as they land; `l2stack dev` runs every one of them. */
export const STACK_SERVICES: StackService[] = [rpcService, tokenApiService, relayerService];

/** "Ready" means answering: polls the service's /health/live until it says 200 (or fails naming it). */
async function answers(name: string, url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(`${url}/health/live`)).ok) return;
    } catch {
      // not accepting connections yet
    }
    if (Date.now() > deadline)
      throw new Error(`${name} at ${url} did not answer /health/live within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Stops the chains an earlier devnet on the same state directory left running when it was killed, then
 * fails naming the port when an explicitly chosen chain port is taken (0 = any free port, never taken).
 */
export async function checkChainPorts(
  options: { l1Port?: number; l2Port?: number; pidDir?: string },
  logger?: Logger,
): Promise<void> {
  const reaped = options.pidDir ? await reapOrphanChains(options.pidDir) : [];
  if (reaped.length > 0)
    logger?.warn(
      { chains: reaped, dir: options.pidDir },
      'stopped chains left running by an earlier devnet whose process died',
    );
  if (options.l1Port) await reservePort(DEVNET_HOST, options.l1Port, 'L1 anvil (--l1-port)');
  if (options.l2Port) await reservePort(DEVNET_HOST, options.l2Port, 'L2 anvil (--l2-port)');
}

/** Checks every service port up front; `start` then starts the services against the running devnet. */
export async function checkServicePorts(env: Record<string, string | undefined>) {
  const bindings = STACK_SERVICES.map((s) => ({ service: s, ...s.port(env) }));
  for (const b of bindings) await reservePort(b.host, b.port, `${b.service.name} (l2stack dev)`);
  return {
    async start(ctx: Omit<StackContext, 'env'>): Promise<{ urls: DevnetState['services'] }> {
      const urls: DevnetState['services'] = {};
      const health: [string, string][] = [];
      for (const b of bindings) {
        const started = await b.service.start({ ...ctx, env, host: b.host, port: b.port });
        urls[b.service.name] = typeof started === 'string' ? started : started.url;
        health.push([b.service.name, typeof started === 'string' ? started : started.healthUrl]);
      }
      await Promise.all(health.map(([name, url]) => answers(name, url)));
      return { urls };
    },
  };
}

/** The short summary `l2stack dev` prints: where everything is and three calls to try. */
export function describeStack(state: DevnetState, stateFile: string, database?: string): string {
  const native = state.nativeToken;
  const rpc = state.services.rpc ?? state.l2.rpcUrl;
  const lines = [
    '',
    'l2stack dev',
    `  L1 chain ${state.l1.chainId}   ${state.l1.rpcUrl}   message service ${state.l1.messageService}`,
    `  L2 chain ${state.l2.chainId}   ${state.l2.upstreamRpcUrl}   message service ${state.l2.messageService}`,
    `  native token ${native}   stablecoin ${state.stablecoin}`,
    ...(state.services.tokenApi
      ? [`  token API    ${state.services.tokenApi}   (docs: ${state.services.tokenApi}/docs)`]
      : []),
    ...(state.services.rpc ? [`  RPC endpoint ${state.services.rpc}`] : []),
    ...(state.services.relayerApi ? [`  relayer API  ${state.services.relayerApi}`] : []),
    ...(state.entryPoint
      ? [`  ERC-4337     EntryPoint v0.7 ${state.entryPoint}   SimpleAccountFactory ${state.accountFactory}`]
      : []),
    ...(state.bundler ? [`  bundler      ${state.bundler.url} (Alto; served through the RPC endpoint)`] : []),
    `  state file   ${stateFile}`,
    ...(database ? [`  database     ${database}`] : []),
    '',
    'Try:',
    `  curl -s -X POST ${rpc} -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}'`,
    state.services.tokenApi
      ? `  curl -s '${state.services.tokenApi}/tokens?limit=5&order=swaps&sort=desc'`
      : `  curl -s -X POST ${rpc} -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["${state.accounts[0]!.address}","latest"]}'`,
    state.services.tokenApi
      ? `  curl -s '${state.services.tokenApi}/tokens/${native}/supply/circulating?format=json'`
      : `  npx l2stack devnet send-message --from l1 --value 0.01 --fee 0.001`,
    '',
  ];
  return lines.join('\n');
}
