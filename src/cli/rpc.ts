import type { Command } from './command.js';
import { runService } from './service-command.js';

export const rpcCommand: Command = {
  name: 'rpc',
  summary: 'serve the public JSON-RPC endpoint in front of RPC_UPSTREAM_URLS',
  async run() {
    const { loadRpcConfig, startRpc } = await import('../rpc/index.js');
    return runService(
      'rpc',
      (env) => {
        const config = loadRpcConfig(env);
        return { config, effective: config.effective };
      },
      async (ctx, config) => {
        const running = await startRpc({ ...ctx, config });
        // One line on stdout for scripts and tests that start the endpoint on port 0.
        process.stdout.write(`l2stack rpc listening on ${running.url}\n`);
      },
    );
  },
};
