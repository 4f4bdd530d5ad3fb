import { dirname } from 'node:path';
import type { CommandBody } from './command.js';
import { devnetDatabase, devnetOptions, devnetOptionHelp, parseDevnetFlags } from './devnet.js';
import { loadCommonConfig } from '../common/config/common-env.js';
import { readProcessEnv } from '../common/config/process-env.js';
import type { DevnetChains } from '../devnet/devnet.js';
import { writeStateFile } from '../devnet/state-file.js';

export const devCommand: CommandBody = {
  options: devnetOptions,
  optionHelp: [
    ...devnetOptionHelp,
    'Service ports: TOKEN_API_PORT (3000), RPC_PORT (8545), API_PORT (9090) unless set.',
  ],
  async run({ values }) {
    const { stateFile, dbDir, options } = parseDevnetFlags(values);
    const env = readProcessEnv();
    const { config } = loadCommonConfig(env);
    // The chains, contracts and services are loaded only to start them: `--help` and a bad flag never need them.
    const [
      { runLifecycle },
      { startDevnet },
      { checkServicePorts, checkChainPorts, describeStack },
      { LateStateRoots, startDevnetStateManager },
    ] = await Promise.all([
      import('../common/lifecycle.js'),
      import('../devnet/devnet.js'),
      import('../devnet/stack.js'),
      import('../devnet/services/state.js'),
    ]);
    return runLifecycle({
      name: 'dev',
      level: config.logLevel,
      database: (common) => devnetDatabase(common, config.database, dbDir),
      start: async ({ common, openDb }) => {
        const started = Date.now();
        // Every port is checked before anything starts, so a taken port fails fast and leaves nothing behind.
        await checkChainPorts(options, common.logger);
        const services = await checkServicePorts(env);
        const dbOpening = openDb();
        const stateRoots = new LateStateRoots();
        // With the ERC-4337 bundler (Alto) on a free port: the RPC endpoint forwards the bundler methods to it.
        // The state manager starts as soon as the message services exist, so it ingests the generated history
        // while it is made instead of after `ready` (svc_getProof and L2->L1 finalization wait for it).
        let stateManagerStarting: Promise<Awaited<ReturnType<typeof startDevnetStateManager>>> | undefined;
        const onMessageServices = (chains: DevnetChains) => {
          stateManagerStarting = dbOpening.then(async (db) => {
            const manager = await startDevnetStateManager({ common, db, devnet: { state: chains }, env });
            stateRoots.attach(manager);
            return manager;
          });
          stateManagerStarting.catch(() => undefined); // awaited below
        };
        const devnet = await startDevnet({
          common,
          db: dbOpening,
          options: { ...options, stateRoots, bundler: true, onMessageServices },
        });
        const db = await dbOpening;
        const stateManager = await (stateManagerStarting ?? startDevnetStateManager({ common, db, devnet, env }));
        stateRoots.attach(stateManager);
        const running = await services.start({
          common,
          db,
          devnet,
          workDir: dirname(stateFile),
          shared: { proofBackend: stateManager.proofBackend },
        });
        const state = {
          ...devnet.state,
          l2: { ...devnet.state.l2, rpcUrl: running.urls.rpc ?? devnet.state.l2.rpcUrl },
          services: running.urls,
        };
        await writeStateFile(stateFile, state);
        process.stdout.write(
          `${describeStack(state, stateFile, db.description)}\nl2stack dev ready (${((Date.now() - started) / 1000).toFixed(1)} s)\n`,
        );
      },
    });
  },
};
