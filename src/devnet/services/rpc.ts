import type { StackService } from './service.js';
import type { DevnetState } from '../state-file.js';
import { parseEnv } from '../../common/config/env.js';
import { loadRpcConfig, rpcEnv, startRpc } from '../../rpc/index.js';

/**
 * The endpoint's bundler variables under `l2stack dev`: the devnet's bundler with its vendor prefix, unless
 * RPC_BUNDLER_URL is set (then that bundler, and its prefix, are the operator's choice).
 */
export function devnetBundlerEnv(state: DevnetState, env: Record<string, string | undefined>): Record<string, string> {
  return state.bundler && !env.RPC_BUNDLER_URL
    ? { RPC_BUNDLER_URL: state.bundler.url, RPC_BUNDLER_VENDOR_PREFIX: state.bundler.vendorPrefix }
    : {};
}

/**
 * The public JSON-RPC endpoint under `l2stack dev`, in front of the devnet L2 node and, unless
 * RPC_BUNDLER_URL says otherwise, of the devnet's bundler (its vendor_ methods renamed to the bundler's prefix).
 */
export const rpcService: StackService = {
  name: 'rpc',
  port(env) {
    const { values } = parseEnv({ RPC_HOST: rpcEnv.RPC_HOST, RPC_PORT: rpcEnv.RPC_PORT }, env);
    return { host: values.RPC_HOST, port: values.RPC_PORT };
  },
  async start({ common, db, devnet, env, host, port, shared }) {
    const config = loadRpcConfig(
      { ...env, ...devnetBundlerEnv(devnet.state, env), RPC_UPSTREAM_URLS: devnet.state.l2.upstreamRpcUrl },
      { host, port, chainId: devnet.state.l2.chainId },
    );
    const running = await startRpc({ common, db, config, proofBackend: shared.proofBackend });
    // With RPC_OPERATOR_PORT the health routes are there, and 404 on the public port.
    return { url: running.url, healthUrl: running.operatorUrl ?? running.url };
  },
};
