import type { components } from '../../../generated/relayer-api/schema.js';

/** A message's status, as the relayer API spec defines it (`MessageStatus`): one source of truth. */
export type MessageStatus = components['schemas']['MessageStatus'];

/** The same statuses as values (the table's check constraint lists them); checked against the spec both ways. */
export const MESSAGE_STATUSES = [
  'SENT',
  'TRANSACTION_SIZE_COMPUTED',
  'ANCHORED',
  'PENDING',
  'CLAIMED_SUCCESS',
  'CLAIMED_REVERTED',
  'NON_EXECUTABLE',
  'ZERO_FEE',
  'FEE_UNDERPRICED',
  'EXCLUDED',
  'NEEDS_MANUAL_INTERVENTION',
  'ABANDONED',
] as const satisfies readonly MessageStatus[];
type MustBeNever<T extends never> = T;
/** Fails `npm run typecheck` when the spec gains a status this list lacks. */
export type EveryStatusListed = MustBeNever<Exclude<MessageStatus, (typeof MESSAGE_STATUSES)[number]>>;

/**
 * Each status by its name (`Status.PENDING`): the only way code outside src/relayer/message/ names one, so a
 * status is spelled in this folder alone (test/architecture/status-literals.test.ts holds it).
 */
export const Status = Object.freeze(Object.fromEntries(MESSAGE_STATUSES.map((s) => [s, s]))) as {
  readonly [S in MessageStatus]: S;
};
