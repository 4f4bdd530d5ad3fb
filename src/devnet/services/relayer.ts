import type { StackService } from './service.js';
import { env, parseEnv } from '../../common/config/env.js';
import { ROLES } from '../accounts.js';
import { loadRelayerConfig, startRelayer, type RelayerConfig } from '../../relayer/index.js';

// Under `l2stack dev` API_PORT may be 0 (any free port) for tests; the relayer itself requires 1..65535.
const portEnv = {
  API_HOST: env.string({ default: '127.0.0.1' }),
  API_PORT: env.integer({ min: 0, max: 65535, default: 9090 }),
};

/**
 * The relayer under `l2stack dev`: both directions on, claiming with the devnet relayer account,
 * sponsoring zero-fee messages, fast polling (the devnet mines a block a second). Any relayer variable set
 * in the environment still applies; the chain endpoints, contracts and key always come from the devnet.
 */
export const relayerService: StackService = {
  name: 'relayerApi',
  port(source) {
    const { values } = parseEnv(portEnv, source);
    return { host: values.API_HOST, port: values.API_PORT };
  },
  async start({ common, db, devnet, env: source, host, port }) {
    const s = devnet.state;
    const key = s.accounts[ROLES.relayer]!.privateKey;
    const loaded = loadRelayerConfig({
      L1_L2_CALLDATA_ENABLED: 'true',
      L1_L2_EOA_ENABLED: 'true',
      L2_L1_CALLDATA_ENABLED: 'true',
      L2_L1_EOA_ENABLED: 'true',
      L1_L2_ENABLE_RELAYER_SPONSORING: 'true',
      L2_L1_ENABLE_RELAYER_SPONSORING: 'true',
      L1_LISTENER_BLOCK_CONFIRMATION: '1',
      L2_LISTENER_BLOCK_CONFIRMATION: '1',
      L1_LISTENER_INTERVAL: '1000',
      L2_LISTENER_INTERVAL: '1000',
      L1_LISTENER_RECEIPT_POLLING_INTERVAL: '500',
      L2_LISTENER_RECEIPT_POLLING_INTERVAL: '500',
      L2_MESSAGE_TREE_DEPTH: String(s.messageTreeDepth),
      ...source,
      L1_L2_AUTO_CLAIM_ENABLED: 'true',
      L2_L1_AUTO_CLAIM_ENABLED: 'true',
      DB_CLEANER_ENABLED: source.DB_CLEANER_ENABLED ?? 'false',
      L1_CONTRACT_ADDRESS: s.l1.messageService,
      L1_RPC_URL: s.l1.rpcUrl,
      L2_CONTRACT_ADDRESS: s.l2.messageService,
      L2_RPC_URL: s.l2.upstreamRpcUrl,
      L1_SIGNER_TYPE: 'private-key',
      L1_SIGNER_PRIVATE_KEY: key,
      L2_SIGNER_TYPE: 'private-key',
      L2_SIGNER_PRIVATE_KEY: key,
      API_PORT: '9090', // replaced below by the dev port (which may be 0)
    });
    const config: RelayerConfig = { ...loaded, api: { ...loaded.api, host, port } }; // the API's limits included
    const relayer = await startRelayer({ common, db, config });
    return relayer.url;
  },
};
