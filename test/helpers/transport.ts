import { chooseTransport } from '../../src/rpc/transport/uws/load.js';

/**
 * The endpoint's transport under test: RPC_TRANSPORT from the environment of the test run (`.ci/run` runs the
 * RPC suites a second time with RPC_TRANSPORT=uws), else the endpoint's default. A test's own env wins.
 */
export const transportFromEnv = (): Record<string, string> =>
  process.env.RPC_TRANSPORT ? { RPC_TRANSPORT: process.env.RPC_TRANSPORT } : {};

/**
 * Whether this run puts the endpoint on uWebSockets.js (RPC_TRANSPORT=uws, or unset/auto where the endpoint
 * would choose uWS): tests of node:http's own limits skip then, saying why.
 */
export const onUws = (() => {
  const requested = process.env.RPC_TRANSPORT ?? 'auto';
  if (requested !== 'auto') return requested === 'uws';
  return chooseTransport('auto', 1).transport === 'uws';
})();
