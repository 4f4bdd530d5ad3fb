import type { Command } from './command.js';
import { createCommon } from './context.js';
import { runUntilStopped } from './run.js';
import { loadBoth } from './token-api.js';
import { createDbClient } from '../common/db/client.js';

export const rpcCommand: Command = {
  name: 'rpc',
  summary: 'serve the public JSON-RPC endpoint in front of RPC_UPSTREAM_URLS',
  async run() {
    const { loadRpcConfig, startRpc } = await import('../rpc/index.js');
    const { common: base, own } = loadBoth((env) => loadRpcConfig(env));
    const common = createCommon({ level: base.config.logLevel, name: 'rpc' });
    common.logger.info({ config: { ...base.effective, ...own.effective } }, 'effective configuration');
    const stopped = runUntilStopped(common);
    const db = await createDbClient(base.config.database);
    common.shutdown.add('database', () => db.close());
    try {
      const running = await startRpc({ common, db, config: own });
      // One line on stdout for scripts and tests that start the endpoint on port 0.
      process.stdout.write(`l2stack rpc listening on ${running.url}\n`);
    } catch (err) {
      await common.shutdown.run('start-up failed');
      throw err;
    }
    return stopped;
  },
};
