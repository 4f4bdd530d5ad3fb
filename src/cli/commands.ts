import type { CommandBody } from './command.js';

/**
 * A sub-command as `--help` lists it. Its module (and everything that module imports: chains, the
 * database, a whole service) is loaded by `load` only when the command runs, so `--version`, `--help`
 * and every start-up pay for one command's code, not for all of them.
 */
export interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<CommandBody>;
}

/** Every `l2stack` sub-command, in the order `--help` lists them. */
export const COMMANDS: CommandEntry[] = [
  {
    name: 'dev',
    summary: 'the whole stack on this machine: devnet + every service, one process, embedded database (npm start)',
    load: async () => (await import('./dev.js')).devCommand,
  },
  {
    name: 'devnet',
    summary: 'run a local L1 + L2 (anvil) with the message services, tokens, a DEX and the coordinator',
    load: async () => (await import('./devnet.js')).devnetCommand,
  },
  {
    name: 'migrate',
    summary: 'apply database migrations (all services, or the ones named)',
    load: async () => (await import('./migrate.js')).migrateCommand,
  },
  {
    name: 'relayer',
    summary:
      'claim cross-layer messages in both directions (configured by environment variables; see .env.example); subcommands: requeue, reset-chain-pin',
    load: async () => (await import('./relayer.js')).relayerCommand,
  },
  {
    name: 'rpc',
    summary: 'serve the public JSON-RPC endpoint in front of RPC_UPSTREAM_URLS (with svc_getProof when STATE_* is set)',
    load: async () => (await import('./rpc.js')).rpcCommand,
  },
  {
    name: 'token-api',
    summary: 'serve the token data API (and run its indexer and supply job)',
    load: async () => (await import('./token-api.js')).tokenApiCommand,
  },
  {
    name: 'token-indexer',
    summary: 'index tokens, swaps and prices from the chain for the token data API',
    load: async () => (await import('./token-indexer.js')).tokenIndexerCommand,
  },
  {
    name: 'verify-proof',
    summary: 'verify a svc_getProof result (stdin, a file or a live endpoint) against a state root',
    load: async () => (await import('./verify-proof.js')).verifyProofCommand,
  },
];
