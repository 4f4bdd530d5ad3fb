import { writeFileSync } from 'node:fs';
import type { DevnetState } from '../../src/devnet/state-file.js';

/** What the relayer API says of one message (specs/relayer-api.openapi.yaml, MessageRecord). */
export interface MessageRecord {
  messageHash: string;
  status: string;
  /** StatusChange: the status entered and when. */
  history: { status: string; at: string; reason: string | null }[];
}

/**
 * The relayer's configuration on a devnet: both directions, one confirmation and 200 ms polling (the devnet
 * mines a block a second), chains at `urls` (as the container reaches them), claims signed with `key`.
 */
export function relayerEnv(s: DevnetState, urls: { l1: string; l2: string }, key: string): Record<string, string> {
  return {
    L1_L2_AUTO_CLAIM_ENABLED: 'true',
    L2_L1_AUTO_CLAIM_ENABLED: 'true',
    DB_CLEANER_ENABLED: 'false',
    L1_RPC_URL: urls.l1,
    L2_RPC_URL: urls.l2,
    L1_CONTRACT_ADDRESS: s.l1.messageService,
    L2_CONTRACT_ADDRESS: s.l2.messageService,
    L1_SIGNER_TYPE: 'private-key',
    L2_SIGNER_TYPE: 'private-key',
    L1_SIGNER_PRIVATE_KEY: key,
    L2_SIGNER_PRIVATE_KEY: key,
    L1_L2_EOA_ENABLED: 'true',
    L1_L2_CALLDATA_ENABLED: 'true',
    L2_L1_EOA_ENABLED: 'true',
    L2_L1_CALLDATA_ENABLED: 'true',
    L1_LISTENER_BLOCK_CONFIRMATION: '1',
    L2_LISTENER_BLOCK_CONFIRMATION: '1',
    L1_LISTENER_INTERVAL: '200',
    L2_LISTENER_INTERVAL: '200',
    L1_LISTENER_RECEIPT_POLLING_INTERVAL: '200',
    L2_LISTENER_RECEIPT_POLLING_INTERVAL: '200',
  };
}

/** Writes `env` as an env file (one KEY=value a line) readable by its owner only: it holds a signer key. */
export function writeEnvFile(path: string, env: Record<string, string>): string {
  writeFileSync(
    path,
    Object.entries(env)
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
    { mode: 0o600 },
  );
  return path;
}

/**
 * The record of `hash` from the relayer API at `api`, or undefined while it does not know it (404). Anything else
 * throws naming it: `until` polls on, reporting the last error; a single read fails saying why. Until the API is
 * built off the start path a request waits (docs/relayer.md "Start"), seconds on a loaded machine: hence 30 s.
 */
export async function record(api: string, hash: string): Promise<MessageRecord | undefined> {
  const res = await fetch(`${api}/messages/${hash}`, { signal: AbortSignal.timeout(30_000) });
  if (res.status === 404) return undefined;
  if (!res.ok) throw new Error(`GET /messages/${hash}: ${res.status} ${(await res.text()).slice(0, 300)}`);
  return (await res.json()) as MessageRecord;
}

/** The records of `hashes` once every one of them is CLAIMED_SUCCESS, else undefined. */
export async function allClaimed(api: string, hashes: string[]): Promise<MessageRecord[] | undefined> {
  const records = await Promise.all(hashes.map((h) => record(api, h)));
  return records.every((r) => r?.status === 'CLAIMED_SUCCESS') ? (records as MessageRecord[]) : undefined;
}

/** True once GET /health/live answers 200. */
export async function live(api: string): Promise<boolean> {
  try {
    return (await fetch(`${api}/health/live`, { signal: AbortSignal.timeout(3_000) })).ok;
  } catch {
    return false;
  }
}

/**
 * Milliseconds from `startedAt` to the first history entry matching `pick` over `records` (the relayer's own
 * clock, which is the host's: the container shares its kernel).
 */
export function msToFirst(
  records: MessageRecord[],
  startedAt: string,
  pick: (e: MessageRecord['history'][number]) => boolean,
): number {
  const times = records.flatMap((r) => r.history.filter(pick).map((e) => Date.parse(e.at)));
  return Math.min(...times) - Date.parse(startedAt);
}
