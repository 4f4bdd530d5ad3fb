import type { Direction } from '../config.js';
import { MESSAGE_STATUSES, Status, type MessageStatus } from './status.js';

const S = Status;

/** Which part of the relayer (or which operator action) makes a move: the groups below are read from it. */
export type Step = 'anchoring' | 'claiming' | 'receipts' | 'resimulation' | 'reset-chain-pin' | 'retry' | 'abandon';
/** The steps an operator takes; every other is the relayer's own. */
const OPERATOR_STEPS: readonly Step[] = ['reset-chain-pin', 'retry', 'abandon'];

export interface Transition {
  from: MessageStatus;
  to: MessageStatus;
  step: Step;
  why: string;
}

/** One line of the table: `step` moves a message from `from` to `to`, for the reason `why`. */
const move = (from: MessageStatus, to: MessageStatus, step: Step, why: string): Transition => ({ from, to, step, why });
/** The same move from each of `froms`. */
const each = (froms: readonly MessageStatus[], to: MessageStatus, step: Step, why: string): Transition[] =>
  froms.map((from) => move(from, to, step, why));

/**
 * The relayer's state machine: every status move a message may make, by whom, and why. applyTransition
 * (writer.ts) refuses any other, so a new move is a new line here (with its reason), never a quiet write
 * somewhere in the pipeline. A message enters the machine as one of ENTRY_STATUSES (enterMessages); the statuses
 * with no line leaving them other than an operator's are where the relayer stops by itself (FINAL).
 */
export const TRANSITIONS: readonly Transition[] = [
  // Anchoring (src/relayer/pipeline/l1-to-l2.ts, l2-to-l1.ts)
  move(S.SENT, S.TRANSACTION_SIZE_COMPUTED, 'anchoring', 'L1→L2: the claim transaction size is known'),
  move(S.TRANSACTION_SIZE_COMPUTED, S.ANCHORED, 'anchoring', 'L1→L2: L2 anchored the message hash'),
  move(S.TRANSACTION_SIZE_COMPUTED, S.CLAIMED_SUCCESS, 'anchoring', 'L1→L2: already claimed on L2, nothing to send'),
  move(
    S.TRANSACTION_SIZE_COMPUTED,
    S.NON_EXECUTABLE,
    'anchoring',
    'L1→L2: a reorg deeper than the confirmations removed the message',
  ),
  move(S.SENT, S.ANCHORED, 'anchoring', 'L2→L1: the L2 block is finalized on L1 and the proof is built'),
  move(S.SENT, S.NON_EXECUTABLE, 'anchoring', 'L2→L1: a reorg deeper than the confirmations removed the message'),
  // Claiming (src/relayer/claim/): from every status the claiming loop reads.
  ...[S.ANCHORED, S.FEE_UNDERPRICED].flatMap((from) => [
    move(from, S.PENDING, 'claiming', 'a claim transaction was signed and recorded with its nonce'),
    move(from, S.CLAIMED_SUCCESS, 'claiming', 'the estimate reverted because someone already claimed it'),
    move(
      from,
      S.NON_EXECUTABLE,
      'claiming',
      'the claim reverts in gas estimation or needs more than MAX_CLAIM_GAS_LIMIT',
    ),
    move(from, S.FEE_UNDERPRICED, 'claiming', 'the fee does not cover the cost, or the fee cap is exceeded'),
    move(from, S.ZERO_FEE, 'claiming', 'no fee and sponsoring off (or the claim is above the sponsor gas limit)'),
    move(from, S.NEEDS_MANUAL_INTERVENTION, 'claiming', 'MAX_NUMBER_OF_RETRIES submissions without success'),
  ]),
  // Receipts (src/relayer/pipeline/persister.ts) and failed broadcasts (ClaimBroadcaster.undo)
  move(S.PENDING, S.CLAIMED_SUCCESS, 'receipts', 'the claim (or another transaction) claimed it'),
  move(S.PENDING, S.CLAIMED_REVERTED, 'receipts', 'the claim transaction was mined and reverted'),
  move(
    S.PENDING,
    S.ANCHORED,
    'receipts',
    'a submission cycle ended (cancelled) or the claim was replaced: claim again',
  ),
  move(S.PENDING, S.SENT, 'receipts', 'L2→L1: the claim reverted on the L1 rate limit; the proof is rebuilt later'),
  move(S.PENDING, S.NEEDS_MANUAL_INTERVENTION, 'receipts', 'MAX_RETRY_CYCLES cycles without success'),
  move(S.PENDING, S.FEE_UNDERPRICED, 'receipts', 'the broadcast failed: back to the status it was claimed from'),
  // Re-simulation of NON_EXECUTABLE claims (src/relayer/pipeline/resimulation.ts)
  move(S.NON_EXECUTABLE, S.ANCHORED, 'resimulation', 'the destination accepts the claim now: claim it again'),
  move(S.NON_EXECUTABLE, S.CLAIMED_SUCCESS, 'resimulation', 'someone else claimed it meanwhile'),
  // Chain pin reset (src/relayer/db/chain-pin.ts): unfinished messages of the old chains are parked.
  ...each(
    [S.SENT, S.TRANSACTION_SIZE_COMPUTED, S.ANCHORED, S.PENDING, S.FEE_UNDERPRICED],
    S.NEEDS_MANUAL_INTERVENTION,
    'reset-chain-pin',
    'reset-chain-pin: the message belongs to the old chains',
  ),
  // Operators (src/relayer/db/admin.ts: the API's retry and abandon, `l2stack relayer requeue`)
  ...[S.NEEDS_MANUAL_INTERVENTION, S.NON_EXECUTABLE, S.CLAIMED_REVERTED, S.FEE_UNDERPRICED, S.ZERO_FEE].flatMap(
    (from) => [
      move(
        from,
        S.TRANSACTION_SIZE_COMPUTED,
        'retry',
        'retry (L1→L2): back to the anchoring check with fresh counters',
      ),
      move(from, S.SENT, 'retry', 'retry (L2→L1): back to the anchoring check, proof rebuilt, fresh counters'),
    ],
  ),
  ...each(
    [
      S.SENT,
      S.TRANSACTION_SIZE_COMPUTED,
      S.ANCHORED,
      S.FEE_UNDERPRICED,
      S.ZERO_FEE,
      S.NON_EXECUTABLE,
      S.CLAIMED_REVERTED,
      S.NEEDS_MANUAL_INTERVENTION,
    ],
    S.ABANDONED,
    'abandon',
    'abandon: an operator gave the message up; it is never claimed',
  ),
];

const ALLOWED = new Set(TRANSITIONS.map((t) => `${t.from}>${t.to}`));

/**
 * Whether a message in `from` may be written with status `to`. Staying in a status is allowed only where the
 * table lists it (FEE_UNDERPRICED re-evaluated by the claiming loop); it writes no history line.
 */
export function isAllowed(from: MessageStatus, to: MessageStatus): boolean {
  return ALLOWED.has(`${from}>${to}`);
}

/** The statuses `step` moves messages out of, in the table's order. */
const leftBy = (step: Step): readonly MessageStatus[] => [
  ...new Set(TRANSITIONS.filter((t) => t.step === step).map((t) => t.from)),
];

// --- The groups the code asks about, read from the table ---------------------------------------------------

/** The statuses a message is first stored in: SENT, or EXCLUDED by the operator's filters. */
export const ENTRY_STATUSES = [S.SENT, S.EXCLUDED] as const;
/** What the claiming loop reads: a claim may be sent for these. */
export const CLAIMABLE = leftBy('claiming');
/**
 * Where the relayer stops by itself: no line of its own leaves them (only an operator's). The cleaner deletes
 * these once old; NON_EXECUTABLE is not one (it is re-simulated).
 */
export const FINAL = MESSAGE_STATUSES.filter(
  (s) => !TRANSITIONS.some((t) => t.from === s && !OPERATOR_STEPS.includes(t.step)),
);
/** Claimable on the destination and not yet claimed: what counts as stuck once it lasts. */
export const STUCK = [...CLAIMABLE, S.PENDING];
/**
 * What the operator's retry moves back into claiming: the statuses the relayer does not leave by itself (or not soon).
 */
export const RETRYABLE = leftBy('retry');
/**
 * Already on the way to a claim (neither final nor retryable): a retry there is answered as done, with nothing written.
 */
export const IN_CLAIMING = MESSAGE_STATUSES.filter((s) => !FINAL.includes(s) && !RETRYABLE.includes(s));
/**
 * What `abandon` moves: every status but PENDING (a claim in flight, its receipt decides), CLAIMED_SUCCESS (done),
 * EXCLUDED (the operator's own filter) and ABANDONED itself.
 */
export const ABANDONABLE = leftBy('abandon');
/** What `l2stack relayer requeue` puts back: the retryable statuses the claiming loop does not retry by itself. */
export const REQUEUEABLE = RETRYABLE.filter((s) => !CLAIMABLE.includes(s));
/** Statuses the relayer still works on: what a chain pin reset would leave aimed at chains that are gone. */
export const UNFINISHED = leftBy('reset-chain-pin');

/**
 * Where a retried message restarts: the anchoring check of its direction, so whatever may have changed since it
 * stopped (claimed by someone else, a reorg, a new finalization) is looked at again before any claim is sent.
 * L1→L2: TRANSACTION_SIZE_COMPUTED (L2's inbox is asked); L2→L1: SENT (the proof is rebuilt).
 */
export const retryTarget = (d: Direction): MessageStatus => (d === 'L1_TO_L2' ? S.TRANSACTION_SIZE_COMPUTED : S.SENT);
