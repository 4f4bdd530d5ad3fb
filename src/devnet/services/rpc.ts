import type { StackService } from '../stack.js';
import { parseEnv } from '../../common/config/env.js';
import { loadRpcConfig, rpcEnv, startRpc } from '../../rpc/index.js';

/** The public JSON-RPC endpoint under `l2stack dev`, in front of the devnet L2 node. */
export const rpcService: StackService = {
  name: 'rpc',
  port(env) {
    const { values } = parseEnv({ RPC_HOST: rpcEnv.RPC_HOST, RPC_PORT: rpcEnv.RPC_PORT }, env);
    return { host: values.RPC_HOST, port: values.RPC_PORT };
  },
  async start({ common, db, devnet, env, host, port, shared }) {
    const config = loadRpcConfig({ ...env, RPC_UPSTREAM_URLS: devnet.state.l2.upstreamRpcUrl }, { host, port, chainId: devnet.state.l2.chainId });
    const running = await startRpc({ common, db, config, proofBackend: shared.proofBackend });
    return running.url;
  },
};
