import type { Command } from './command.js';
import { migrateCommand } from './migrate.js';
import { devnetCommand } from './devnet.js';
import { devCommand } from './dev.js';
import { tokenApiCommand } from './token-api.js';
import { tokenIndexerCommand } from './token-indexer.js';
import { relayerCommand } from './relayer.js';
import { rpcCommand } from './rpc.js';
import { verifyProofCommand } from './verify-proof.js';

/** Every `l2stack` sub-command, in the order `--help` lists them. */
export const COMMANDS: Command[] = [
  devCommand,
  devnetCommand,
  migrateCommand,
  relayerCommand,
  rpcCommand,
  tokenApiCommand,
  tokenIndexerCommand,
  verifyProofCommand,
];
