import type { StackService } from '../stack.js';
import { parseEnv } from '../../common/config/env.js';
import { loadRpcConfig, rpcEnv, startRpc } from '../../rpc/index.js';

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
    const bundler = devnet.state.bundler;
    const bundlerEnv = bundler && !env.RPC_BUNDLER_URL ? { RPC_BUNDLER_URL: bundler.url, RPC_BUNDLER_VENDOR_PREFIX: bundler.vendorPrefix } : {};
    const config = loadRpcConfig({ ...env, ...bundlerEnv, RPC_UPSTREAM_URLS: devnet.state.l2.upstreamRpcUrl }, { host, port, chainId: devnet.state.l2.chainId });
    const running = await startRpc({ common, db, config, proofBackend: shared.proofBackend });
    return running.url;
  },
};
