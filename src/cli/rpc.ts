import type { CommandBody } from './command.js';
import { keysCommand } from './rpc-keys.js';
import { runService } from './service-command.js';

export const rpcCommand: CommandBody = {
  subcommands: [keysCommand],
  async run() {
    // Loaded here, not with the command: `l2stack rpc keys …` needs none of the endpoint's modules.
    const [
      { checkWorkersConfig, isClusterWorker, loadRpcConfig, startRpc },
      { chooseTransport },
      { loadStateConfig, startStateManager },
    ] = await Promise.all([
      import('../rpc/index.js'),
      import('../rpc/transport/uws/load.js'),
      import('../state/index.js'),
    ]);
    return runService(
      'rpc',
      (env) => {
        const rpc = loadRpcConfig(env);
        // RPC_WORKERS it cannot honour, and RPC_TRANSPORT=uws where uWS cannot run, are refused here, before the
        // database opens.
        checkWorkersConfig(rpc, env);
        chooseTransport(rpc.transport, rpc.workers);
        // The state manager runs in the endpoint's process when configured; replicas on one database
        // share its tree (one ingests under an advisory lock, every one serves proofs).
        const state =
          env.STATE_L2_RPC_URL !== undefined && env.STATE_L2_RPC_URL !== '' ? loadStateConfig(env) : undefined;
        return { config: { rpc, state }, effective: rpc.effective };
      },
      async (ctx, { rpc, state }) => {
        const manager = state ? await startStateManager({ ...ctx, config: state }) : undefined;
        const running = await startRpc({ ...ctx, config: rpc, proofBackend: manager?.proofBackend, workers: true });
        // One line on stdout for scripts and tests that start the endpoint on port 0: the primary's, once every
        // worker listens (a worker shares its stdout and reports to the primary instead).
        if (isClusterWorker()) return;
        process.stdout.write(`l2stack rpc listening on ${running.url}\n`);
        if (running.operatorUrl) process.stdout.write(`l2stack rpc operator routes on ${running.operatorUrl}\n`);
      },
    );
  },
};
