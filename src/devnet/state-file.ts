import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { DevAccount } from './accounts.js';

/** What `l2stack devnet` / `l2stack dev` write for tools and tests (`--state-file`, default .l2stack/devnet.json). */
export interface DevnetState {
  l1: { chainId: number; rpcUrl: string; messageService: string };
  l2: {
    chainId: number;
    /** The public endpoint when the RPC service runs, else the upstream node. */
    rpcUrl: string;
    upstreamRpcUrl: string;
    messageService: string;
  };
  nativeToken: string;
  stablecoin: string;
  tokens: { symbol: string; address: string; decimals: number; name: string }[];
  dex: { factory: string; router: string; pairs: { token0: string; token1: string; pair: string }[] };
  callRecorder: { l1: string; l2: string };
  /**
   * ClaimForwarder of each message service (try `L1_CLAIM_VIA_ADDRESS` / `L2_CLAIM_VIA_ADDRESS` with them).
   * Optional: state files written before it existed lack it.
   */
  claimForwarder?: { l1: string; l2: string };
  /**
   * ERC-4337 v0.7 EntryPoint on L2, compiled from @account-abstraction/contracts and deployed through the
   * CREATE2 deployer (so the same address every run). Optional: state files written before it lack it.
   */
  entryPoint?: string;
  /** SimpleAccountFactory bound to `entryPoint`: `createAccount(owner, salt)`, `getAddress(owner, salt)`. */
  accountFactory?: string;
  /**
   * The ERC-4337 bundler the devnet runs (Alto) and the prefix it gives the endpoint's vendor_ methods.
   * Absent when the devnet runs without one.
   */
  bundler?: { url: string; vendorPrefix: string };
  excludedWallets: { address: string; label: string; status: string }[];
  accounts: DevAccount[];
  messageTreeDepth: number;
  /** Unix seconds of the L2 genesis block (about 26 h before start, so 24 h of price history exist). */
  genesisTimestamp: number;
  services: { tokenApi?: string; rpc?: string; relayerApi?: string };
}

export const DEFAULT_STATE_FILE = '.l2stack/devnet.json';

/** Written atomically (temp file + rename) so a reader never sees half a file. */
export async function writeStateFile(path: string, state: DevnetState): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(state, null, 2)}\n`);
  await rename(tmp, path);
}

export async function readStateFile(path: string): Promise<DevnetState> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new Error(`no devnet state file at ${path}: start one with \`l2stack devnet\` (or pass --state-file)`);
  }
  return JSON.parse(text) as DevnetState;
}
