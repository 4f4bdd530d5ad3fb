import { readFile } from 'node:fs/promises';
import type { CommandBody } from './command.js';
import { commaList } from '../common/config/env.js';
import { UsageError } from './command.js';
import { stringFlag, stringOptions } from './args.js';
import { STATE_HASHES, DEFAULT_STATE_HASH, type StateHash } from '../state/config.js';
import { hashProviderOf } from '../state/state-hash.js';
import { verifyStateProof, type StateProofResultJson } from '../state/verify.js';

/** Largest input read (stdin, --file or the endpoint's answer): a result with 8 keys is ~120 KiB. */
const MAX_INPUT_BYTES = 16 * 1024 * 1024;
/** Bound on the svc_getProof call to --rpc. */
const RPC_TIMEOUT_MS = 30_000;

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY)
    throw new UsageError(
      'pipe a svc_getProof result into stdin (l2stack verify-proof --root 0x… < result.json), or use --file or --rpc',
    );
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of process.stdin) {
    n += (chunk as Buffer).length;
    if (n > MAX_INPUT_BYTES) throw new UsageError(`stdin is over ${MAX_INPUT_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** svc_getProof(address, keys, block) from a live endpoint; returns the response body (JSON text). */
async function fetchProof(url: string, values: Record<string, unknown>): Promise<string> {
  const address = stringFlag(values.address);
  if (!address || !/^0x[0-9a-fA-F]{40}$/.test(address)) throw new UsageError('--rpc needs --address 0x… (20 bytes)');
  const keys = commaList(stringFlag(values.keys) ?? '');
  const block = stringFlag(values.block) ?? 'finalized';
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'svc_getProof', params: [address, keys, block] }),
    signal: AbortSignal.timeout(RPC_TIMEOUT_MS),
  });
  const text = await res.text();
  if (text.length > MAX_INPUT_BYTES) throw new Error(`the answer of ${url} is over ${MAX_INPUT_BYTES} bytes`);
  return text;
}

function hashOf(v: unknown): StateHash {
  const h = v ?? DEFAULT_STATE_HASH;
  if (typeof h !== 'string' || !(STATE_HASHES as readonly string[]).includes(h))
    throw new UsageError(`--hash must be one of ${STATE_HASHES.join(', ')}, got "${String(h).slice(0, 40)}"`);
  return h as StateHash;
}

/**
 * The command without its process: checks `input` (JSON text) against `root` under `hash` (STATE_HASH of
 * the tree that served it; STATE_HASH's default without --hash); returns the exit code (0 all verify, 1 one does not);
 * throws UsageError for a bad --root or --hash, or input that is not JSON.
 */
export function verifyProof(
  root: unknown,
  input: string,
  out: (line: string) => void,
  err: (line: string) => void,
  hash?: unknown,
): number {
  if (typeof root !== 'string') throw new UsageError('--root is required');
  if (!/^0x[0-9a-fA-F]{64}$/.test(root))
    throw new UsageError(`--root must be 0x followed by 64 hex digits, got "${root.slice(0, 80)}"`);
  const hasher = hashProviderOf(hashOf(hash));
  let parsed: unknown;
  try {
    parsed = JSON.parse(input);
  } catch (e) {
    throw new UsageError(`the input is not JSON: ${(e as Error).message}`);
  }
  if (parsed !== null && typeof parsed === 'object' && 'error' in parsed) {
    err(
      `verify-proof: the endpoint answered an error: ${JSON.stringify((parsed as { error: unknown }).error).slice(0, 300)}\n`,
    );
    return 1;
  }
  const result = (
    parsed !== null && typeof parsed === 'object' && 'result' in parsed
      ? (parsed as { result: unknown }).result
      : parsed
  ) as StateProofResultJson;
  const v = verifyStateProof(root, result, hasher);
  if (!v.ok) {
    err(`verify-proof: ${v.failed} does not verify: ${v.reason}\n`);
    return 1;
  }
  const n = result.storageProofs.length;
  const account = v.account
    ? `account ${result.accountProof.key} exists (nonce ${v.account.nonce}, balance ${v.account.balance}, storageRoot ${v.storageRoot})`
    : `account ${result.accountProof.key} does not exist`;
  const present = result.storageProofs.filter((e) => 'leafIndex' in e).length;
  out(`ok: ${account}; ${n} storage proof${n === 1 ? '' : 's'} verified (${present} present, ${n - present} absent)\n`);
  return 0;
}

/**
 * `l2stack verify-proof --root 0x… [--hash poseidon2] < result.json` (or `--file`, or `--rpc` to ask a live
 * endpoint): checks every proof of a svc_getProof result (the bare result or the whole JSON-RPC response)
 * against a state root, e.g. the one stored on L1 at finalization.
 */
export const verifyProofCommand: CommandBody = {
  usage:
    '--root 0x… [--hash poseidon2|keccak] [< result.json | --file result.json | --rpc URL --address 0x… [--keys k1,k2] [--block N]]',
  options: stringOptions('root', 'hash', 'file', 'rpc', 'address', 'keys', 'block'),
  optionHelp: [
    '--root 0x…  the account-tree state root (32 bytes), e.g. stateRootHashes(block) on the L1 message service',
    `--hash      the tree's STATE_HASH: ${STATE_HASHES.join(' | ')} (default ${DEFAULT_STATE_HASH})`,
    'stdin       the svc_getProof result as JSON, or the whole JSON-RPC response carrying it',
    '--file      read it from this file instead',
    `--rpc URL   ask this endpoint: svc_getProof(--address, --keys (comma-separated), --block, default finalized); ${RPC_TIMEOUT_MS / 1000} s bound`,
    'exit code   0 every proof verifies; 1 one does not (named on stderr); 2 usage error',
  ],
  async run({ values }) {
    const file = stringFlag(values.file);
    const rpc = stringFlag(values.rpc);
    if (file && rpc) throw new UsageError('--file and --rpc are exclusive');
    const input = rpc ? await fetchProof(rpc, values) : file ? await readFile(file, 'utf8') : await readStdin();
    return verifyProof(
      values.root,
      input,
      (line) => process.stdout.write(line),
      (line) => process.stderr.write(line),
      values.hash,
    );
  },
};
