import type { CommandBody } from './command.js';
import { UsageError } from './command.js';
import { verifyStateProof, type StateProofResultJson } from '../state/verify.js';

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new UsageError('pipe a svc_getProof result into stdin (l2stack verify-proof --root 0x… < result.json)');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The command without its process: checks `input` (JSON text) against `root`; returns the exit code
 * (0 all verify, 1 one does not); throws UsageError for a bad --root or input that is not JSON.
 */
export function verifyProof(root: unknown, input: string, out: (line: string) => void, err: (line: string) => void): number {
  if (typeof root !== 'string') throw new UsageError('--root is required');
  if (!/^0x[0-9a-fA-F]{64}$/.test(root)) throw new UsageError(`--root must be 0x followed by 64 hex digits, got "${root.slice(0, 80)}"`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(input);
  } catch (e) {
    throw new UsageError(`stdin is not JSON: ${(e as Error).message}`);
  }
  const result = (parsed !== null && typeof parsed === 'object' && 'result' in parsed ? (parsed as { result: unknown }).result : parsed) as StateProofResultJson;
  const v = verifyStateProof(root, result);
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
 * `l2stack verify-proof --root 0x… < result.json`: checks every proof of a svc_getProof result (the bare
 * result or the whole JSON-RPC response) against a state root, e.g. the one stored on L1 at finalization.
 */
export const verifyProofCommand: CommandBody = {
  usage: '< result.json',
  options: { root: { type: 'string' } },
  optionHelp: [
    '--root 0x…  the account-tree state root (32 bytes), e.g. stateRootHashes(block) on the L1 message service',
    'stdin       the svc_getProof result as JSON, or the whole JSON-RPC response carrying it',
    'exit code   0 every proof verifies; 1 one does not (named on stderr); 2 usage error',
  ],
  async run({ values }) {
    return verifyProof(values.root, await readStdin(), (line) => process.stdout.write(line), (line) => process.stderr.write(line));
  },
};
