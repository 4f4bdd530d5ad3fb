import type { Command } from './command.js';
import { UsageError } from './command.js';
import { stringFlag } from './args.js';
import { withRelayerDb } from './relayer-db.js';
import { DIRECTIONS, type Direction } from '../relayer/config.js';
import type { MessageStatus } from '../relayer/message/status.js';
import { REQUEUEABLE } from '../relayer/message/transitions.js';

const HASH = /^0x[0-9a-fA-F]{64}$/;

/** The checked selection of `l2stack relayer requeue` (exported for tests). */
export function parseRequeueArgs(
  values: Record<string, unknown>,
  positionals: string[],
): { hash?: string; status?: MessageStatus; direction?: Direction } {
  const hash = positionals[0];
  const status = stringFlag(values.status);
  const direction = stringFlag(values.direction);
  if (hash === undefined && status === undefined)
    throw new UsageError('name a message hash or --status S (one of them)');
  if (hash !== undefined && status !== undefined)
    throw new UsageError(`name either a message hash or --status, not both (got "${hash}" and --status ${status})`);
  if (hash !== undefined && !HASH.test(hash))
    throw new UsageError(`the message hash must be 0x followed by 64 hex digits, got "${hash}"`);
  if (status !== undefined && !(REQUEUEABLE as readonly string[]).includes(status)) {
    throw new UsageError(
      `--status must be one of ${REQUEUEABLE.join(', ')}, got "${status}" (FEE_UNDERPRICED is retried by itself; EXCLUDED follows your filters)`,
    );
  }
  if (direction !== undefined && !(DIRECTIONS as readonly string[]).includes(direction))
    throw new UsageError(`--direction must be L1_TO_L2 or L2_TO_L1, got "${direction}"`);
  return {
    hash: hash?.toLowerCase(),
    status: status as MessageStatus | undefined,
    direction: direction as Direction | undefined,
  };
}

export const requeueCommand: Command = {
  name: 'requeue',
  summary:
    'put messages the relayer gave up on (NEEDS_MANUAL_INTERVENTION, NON_EXECUTABLE, ...) back into its pipeline',
  usage: '<message-hash> | --status S [--direction D]',
  maxPositionals: 1,
  options: { status: { type: 'string' }, direction: { type: 'string' } },
  optionHelp: [
    '<message-hash>      the message to requeue (both directions unless --direction)',
    `--status S          every message in status S: ${REQUEUEABLE.join(', ')}`,
    '--direction D       only L1_TO_L2 or L2_TO_L1',
    'The message restarts at its anchoring check (L1_TO_L2: TRANSACTION_SIZE_COMPUTED, L2_TO_L1: SENT) with',
    'retries, cycles and bumps reset; the status history records "requeued by operator". Uses DATABASE_*.',
  ],
  async run({ values, positionals }) {
    // Input is checked before the database is opened.
    const select = parseRequeueArgs(values, positionals);
    const { requeueMessages } = await import('../relayer/db/requeue.js');
    return withRelayerDb('message', async (repository) => {
      const out = await requeueMessages(repository, select);
      for (const r of out.requeued)
        process.stdout.write(`requeued ${r.hash} ${r.direction}: ${r.from} -> ${r.to} (retries ${r.retries} -> 0)\n`);
      const where = `${select.direction ? ` ${select.direction}` : ''}`;
      if (select.hash !== undefined) {
        if (out.requeued.length === 0 && out.refused.length === 0)
          throw new UsageError(`no${where} message ${select.hash} in the relayer's database`);
        if (out.refused.length > 0) {
          const list = out.refused.map((r) => `${r.direction} is ${r.status}`).join(', ');
          throw new UsageError(`message ${select.hash} ${list}: only ${REQUEUEABLE.join(', ')} can be requeued`);
        }
      }
      process.stdout.write(
        `${out.requeued.length} message(s) requeued${select.status ? ` from ${select.status}${where}` : ''}\n`,
      );
      return 0;
    });
  },
};
