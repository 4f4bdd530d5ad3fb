import { ZeroAddress, type Log } from 'ethers';
import type { Logger } from '../../common/log.js';
import type { Chain } from '../chain.js';
import type { ChainConfig } from '../chain-config.js';
import type { Direction, DirectionConfig, RelayerConfig } from '../config.js';
import type { MessageRow, RelayerRepository } from '../db/repository.js';
import type { MessageStatus } from '../message/status.js';
import { MESSAGE_SENT_TOPIC } from '../message-sent.js';
import type { RelayerMetrics } from '../metrics.js';
import type { ClaimSender } from '../claim/sender.js';
import type { SignerFunds } from '../claim/funds.js';
import type { ChainPinWatch } from '../pin-watch.js';

/** Everything one direction's processors share. */
export interface DirectionContext {
  direction: Direction;
  config: RelayerConfig;
  /** Settings of this direction (switches, sponsoring). */
  dir: DirectionConfig;
  /** Where messages are sent (listened to) and where they are claimed. */
  origin: Chain;
  originConfig: ChainConfig;
  destination: Chain;
  destinationConfig: ChainConfig;
  repo: RelayerRepository;
  metrics: RelayerMetrics;
  logger: Logger;
  /**
   * The direction's primary signer (`*_SIGNER_PRIVATE_KEY` / remote / kms): gas estimates and the fee recipient use its
   * address.
   */
  sender: ClaimSender;
  /**
   * Every signer claiming this direction, the primary first (extra keys: `*_SIGNER_PRIVATE_KEYS`); absent = [sender].
   */
  senders?: ClaimSender[];
  /** Set by the listener after each successful iteration (readiness: "listener progressing"). */
  health: { lastProgressAt: number | undefined; lastBlock: number | undefined };
  /**
   * Whether each signer (in the order of `senders`) can pay its next claim (shared with readiness); claiming makes its
   * own when absent.
   */
  funds?: SignerFunds[];
  /**
   * Aborted when the direction stops (shutdown, lost leadership, the chain pin no longer matching): no new claim is
   * started after it.
   */
  signal?: AbortSignal;
  /** The running chain pin check: the listener reports each head it reads (a head far back means a reset chain). */
  pin?: Pick<ChainPinWatch, 'sawHead'>;
}

/** L1_L2 / L2_L1: the prefix of this direction's variables, for messages to operators. */
export const directionPrefix = (d: Direction) => (d === 'L1_TO_L2' ? 'L1_L2' : 'L2_L1');

/**
 * Where claim transactions (and their gas estimates) go: the `*_CLAIM_VIA_ADDRESS` contract when set, else the message
 * service.
 */
export const claimTarget = (ctx: Pick<DirectionContext, 'destination' | 'destinationConfig'>) =>
  ctx.destinationConfig.claimViaAddress ?? ctx.destination.contract;

/**
 * The fee recipient argument of a claim. Zero means "the caller", which is the relayer when it calls the
 * message service itself; through a claim-via contract the caller is that contract, so the relayer names itself.
 */
export const claimFeeRecipient = (ctx: Pick<DirectionContext, 'destinationConfig' | 'sender'>) =>
  ctx.destinationConfig.claimViaAddress === undefined ? ZeroAddress : ctx.sender.signer.address;

/** Every signer of the direction, the primary first. */
export const sendersOf = (ctx: Pick<DirectionContext, 'sender' | 'senders'>): ClaimSender[] =>
  ctx.senders ?? [ctx.sender];

/**
 * The signer that sent a PENDING row's claim (rows from before claim_signer: the primary), or undefined if no longer
 * configured.
 */
export const senderOf = (
  ctx: Pick<DirectionContext, 'sender' | 'senders'>,
  m: { claim_signer: string | null },
): ClaimSender | undefined => sendersOf(ctx).find((s) => s.owns(m));

/**
 * How long a loop may work from the rows of its last read while nothing was written since (see
 * RelayerRepository.dueChanged): the delay before it sees a change written by another process.
 */
const UNCHANGED_ROWS_MAX_AGE_MS = 1_000;

/** A loop's page of the direction's messages in `statuses`: read again once written to, or once its last read aged. */
export const duePage = (
  ctx: Pick<DirectionContext, 'repo' | 'direction' | 'config'>,
  statuses: readonly MessageStatus[],
): Promise<MessageRow[]> =>
  ctx.repo.dueChanged(ctx.direction, statuses, ctx.config.maxFetchMessagesFromDb, UNCHANGED_ROWS_MAX_AGE_MS);

/** The origin contract's MessageSent logs still in the chain in blocks `fromBlock`..`toBlock` (`hash`'s, if given). */
export async function messageSentLogs(
  ctx: Pick<DirectionContext, 'origin'>,
  fromBlock: number,
  toBlock: number,
  hash?: string,
): Promise<Log[]> {
  const topics = hash === undefined ? [MESSAGE_SENT_TOPIC] : [MESSAGE_SENT_TOPIC, null, null, hash];
  const logs = await ctx.origin.provider.getLogs({ address: ctx.origin.contract, topics, fromBlock, toBlock });
  return logs.filter((l) => !l.removed);
}
