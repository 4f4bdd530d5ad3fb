import type { Common } from '../../common/kernel.js';
import type { DbClient } from '../../common/db/client.js';
import type { ProofBackend } from '../../rpc/index.js';
import type { Devnet } from '../devnet.js';
import type { DevnetState } from '../state-file.js';

/**
 * What one service of `l2stack dev` is and what it is given. Kept apart from stack.ts, which lists and
 * starts the services, so each service file can name its type without importing the list that imports it.
 */
export interface StackService {
  name: keyof DevnetState['services'];
  port(env: Record<string, string | undefined>): { host: string; port: number };
  /** Its URL, or its URL and where its /health/live is when that is another port (RPC_OPERATOR_PORT). */
  start(ctx: StackContext & { host: string; port: number }): Promise<string | { url: string; healthUrl: string }>;
}

export interface StackContext {
  common: Common;
  db: DbClient;
  devnet: Devnet;
  env: Record<string, string | undefined>;
  workDir: string;
  /** What services started earlier hand to later ones (the state manager's proofs to the RPC endpoint). */
  shared: { proofBackend?: ProofBackend };
}
