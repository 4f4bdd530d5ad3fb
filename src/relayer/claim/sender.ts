import { bytesToHex, hexToBytes } from '../../common/eth/hex.js';
import { keccak256 } from '../../common/eth/keccak.js';
import {
  BroadcastRefusedError,
  ForeignChainTransactionError,
  NonceGapError,
  classifyBroadcastError,
} from '../broadcast-errors.js';
import type { Logger } from '../../common/log.js';
import type { Chain } from '../chain.js';
import { leaseClaims, returnClaim, type SignerKey } from './lease.js';
import type { MessagePatch, MessageRow, RelayerRepository } from '../db/repository.js';
import type { MessageStatus } from '../message/status.js';
import type { TxSigner, UnsignedTx } from '../signer.js';
import type { Direction } from '../config.js';
import type { RelayerMetrics } from '../metrics.js';
import { foreignChainReason } from '../tx-chain-id.js';

export {
  BroadcastRefusedError,
  ForeignChainTransactionError,
  NonceGapError,
  classifyBroadcastError,
} from '../broadcast-errors.js';

export interface PlannedClaim {
  message: MessageRow;
  /** Statuses the message may still be in for the claim to go out. */
  from: readonly MessageStatus[];
  claim: ClaimTx;
}

/** A claim signed at its leased nonce. */
type LeasedPlannedClaim = PlannedClaim & { signed: string; hash: string; nonce: number; patch: MessagePatch };

export interface Submitted {
  message: MessageRow;
  hash: string;
  nonce: number;
  /** Settles once the node accepted the transaction, or rejects once it was undone. */
  sent: Promise<void>;
}

/** Claims of a batch on their way to the node at once (see broadcastInOrder). */
const BROADCAST_WINDOW = 32;
const withoutSponsored = ({ sponsored: _sponsored, ...tx }: ClaimTx) => tx;
/**
 * The hash of a signed transaction is the keccak of its bytes: no need to parse it back, and the fast
 * keccak over bytes skips ethers' hex round trips.
 */
const transactionHash = (signed: string) => bytesToHex(keccak256(hexToBytes(signed, 'signed transaction')));

export interface ClaimTx {
  to: string;
  data: string;
  gasLimit: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  sponsored: boolean;
}

/**
 * Sends claim transactions for one chain's signer. Nonces are leased from the database under a row lock
 * (`signer_nonce`), and the signed transaction is recorded with the message (PENDING) in the same
 * database transaction as the lease, before it is broadcast: after a crash the persister finds the raw
 * transaction and rebroadcasts it, so no nonce is lost and no message is claimed twice.
 */
export class ClaimSender {
  constructor(
    private readonly repo: RelayerRepository,
    private readonly chain: Chain,
    readonly signer: TxSigner,
    private readonly options: {
      maxNonceDiff: number;
      logger: Logger;
      metrics?: RelayerMetrics;
      direction: Direction;
      /**
       * Whether this is the direction's primary signer (`*_SIGNER_PRIVATE_KEY` etc.; default true): rows written
       * before claim_signer was recorded have it null and belong to the primary signer.
       */
      primary?: boolean;
    },
  ) {}

  get primary(): boolean {
    return this.options.primary ?? true;
  }

  /** Whether a PENDING row's claim was sent by this signer (null claim_signer: the primary one). */
  owns(m: Pick<MessageRow, 'claim_signer'>): boolean {
    return m.claim_signer === null ? this.primary : m.claim_signer === this.signer.address;
  }

  /** The next nonce this process leased (exclusive), and the signer's mined nonce as last seen by the receipt loop. */
  private leasedUpTo: number | undefined;
  private mined: number | undefined;
  private progressAt = Date.now();

  /**
   * The receipt loop saw the signer's mined nonce (`latest`). Progress is a nonce that moved, or nothing of
   * ours in flight: the stall clock (see stalledFor) runs only while claims wait and the nonce stands still.
   */
  noteMined(nonce: number): void {
    if (this.mined === undefined || nonce > this.mined || this.inFlight() === 0) this.progressAt = Date.now();
    this.mined = Math.max(nonce, this.mined ?? 0);
  }

  /** The receipt loop found no PENDING claim of this signer: nothing is in flight. */
  noteIdle(): void {
    if (this.leasedUpTo !== undefined) this.mined = Math.max(this.leasedUpTo, this.mined ?? 0);
    this.progressAt = Date.now();
  }

  /** Claims leased by this process and not yet mined, as far as this process knows (0 when unknown). */
  inFlight(): number {
    if (this.leasedUpTo === undefined || this.mined === undefined) return 0;
    return Math.max(this.leasedUpTo - this.mined, 0);
  }

  /** Whether claims of this signer have waited with its mined nonce unmoved for longer than `ms`. */
  stalledFor(ms: number): boolean {
    return this.inFlight() > 0 && Date.now() - this.progressAt > ms;
  }

  private paused = false;

  /** Logs the pause once when it starts and once when it ends; the gauge follows it. */
  private setPaused(paused: boolean, detail?: string): void {
    this.options.metrics?.noncePaused.set(
      { direction: this.options.direction, signer: this.signer.address },
      paused ? 1 : 0,
    );
    if (paused === this.paused) return;
    this.paused = paused;
    if (paused)
      this.options.logger.error(
        { direction: this.options.direction, signer: this.signer.address },
        `claiming paused: ${detail}`,
      );
    else
      this.options.logger.info(
        { direction: this.options.direction, signer: this.signer.address },
        'claiming resumed: the database nonce is within MAX_NONCE_DIFF of the chain',
      );
  }

  private nonceRowReady = false;

  /**
   * Leases consecutive nonces for the claims, signs them and moves their messages to PENDING with the
   * signed transactions, all in one database transaction (a handful of statements whatever the count),
   * then broadcasts them in nonce order. Messages no longer in their `from` status are skipped (they get no
   * nonce); claims beyond MAX_NONCE_DIFF are not sent, and when none fits a NonceGapError is thrown.
   * Results follow the order of the claims sent, which is the order given.
   */
  async submitMany(claims: readonly PlannedClaim[]): Promise<Submitted[]> {
    if (claims.length === 0) return [];
    const chainNonce = await this.chainNonce();
    const { leased, onChain, next } = await leaseClaims(this.repo, this.key, claims, chainNonce, !this.nonceRowReady, {
      room: (nonce, chain) => this.room(nonce, chain),
      freshChainNonce: async () => {
        const fresh = await this.chain.provider.getTransactionCount(this.signer.address, 'pending');
        this.cachedNonce = { value: fresh, at: Date.now() };
        return fresh;
      },
      reclaimed: (from, to) =>
        this.options.logger.warn({ direction: this.options.direction, from, to }, 'stale nonce leases reclaimed'),
      sign: (kept, nonce) => this.sign(kept, nonce),
    });
    this.nonceRowReady = true;
    if (leased.length > 0) {
      this.leasedUpTo = next;
      this.mined ??= onChain;
    }
    return this.broadcastInOrder(leased);
  }

  /** The signer's nonce row and the PENDING claims that hold its nonces (lease.ts). */
  private get key(): SignerKey {
    return {
      chainId: this.chain.chainId.toString(),
      address: this.signer.address,
      direction: this.options.direction,
      primary: this.primary,
    };
  }

  /** Claims that may take nonces from `nonce` within MAX_NONCE_DIFF of the chain's; none: paused (NonceGapError). */
  private room(nonce: number, onChain: number): number {
    const room = this.options.maxNonceDiff - (nonce - onChain) + 1;
    if (room <= 0) {
      const detail = `the database nonce ${nonce} is ${nonce - onChain} ahead of the chain's ${onChain} for ${this.signer.address}, more than MAX_NONCE_DIFF (${this.options.maxNonceDiff}); claiming resumes when the chain catches up`;
      this.setPaused(true, detail);
      throw new NonceGapError(detail);
    }
    this.setPaused(false);
    return room;
  }

  /** Signs the claims at consecutive nonces from `nonce`, with what their messages are written with at PENDING. */
  private async sign(kept: readonly PlannedClaim[], nonce: number): Promise<LeasedPlannedClaim[]> {
    const out: LeasedPlannedClaim[] = [];
    for (const [i, c] of kept.entries()) {
      const tx: UnsignedTx = { chainId: this.chain.chainId, nonce: nonce + i, value: 0n, ...withoutSponsored(c.claim) };
      const signed = await this.signer.signTransaction(tx);
      const hash = transactionHash(signed);
      out.push({ ...c, signed, hash, nonce: nonce + i, patch: this.pendingPatch(c.claim, signed, hash, nonce + i) });
    }
    return out;
  }

  private pendingPatch(claim: ClaimTx, signed: string, hash: string, nonce: number): MessagePatch {
    return {
      claim_tx_hash: hash,
      claim_tx_nonce: String(nonce),
      claim_gas_limit: claim.gasLimit.toString(),
      claim_max_fee_per_gas: claim.maxFeePerGas.toString(),
      claim_max_priority_fee_per_gas: claim.maxPriorityFeePerGas.toString(),
      claim_tx_raw: signed,
      is_sponsored: claim.sponsored,
      retry_after: null,
      bumps: 0,
      claim_tx_kind: 'claim',
      claim_signer: this.signer.address,
    };
  }

  /**
   * Broadcasts leased claims, overlapping with the next lease; each `sent` settles once its claim was
   * accepted (or undone). The claims of a batch go out BROADCAST_WINDOW at a time without waiting for each
   * answer (a node keeps a transaction whose lower nonce is still on its way, as it keeps any future
   * nonce): one at a time, the batch took the sum of its round trips, which bounded claims/s (issue 12).
   * A claim the node refuses outright, with none of the later ones accepted, stops the rest of its batch:
   * their higher nonces could not be mined before it, so they are given back too, highest first, so the
   * lease returns to the refused nonce with no hole. When a later one was accepted (a refusal of that
   * transaction alone), each failed claim is given back on its own, its nonce filled (see undo()).
   */
  private broadcastInOrder(leased: LeasedPlannedClaim[]): Submitted[] {
    const settle = leased.map(() => {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const sent = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      // Callers await `sent` when they need the outcome; during shutdown nobody may, and a broadcast cancelled
      // by a destroyed provider must not surface as an unhandled rejection (undo() has already recorded it).
      sent.catch(() => undefined);
      return { sent, resolve, reject };
    });
    for (const c of leased) this.queued.add(c.hash);
    const accepted = (i: number) => {
      this.options.metrics?.claimsSent.inc({
        direction: this.options.direction,
        sponsored: String(leased[i]!.claim.sponsored),
        signer: this.signer.address,
      });
      settle[i]!.resolve();
    };
    const batch = this.queue
      .catch(() => undefined)
      .then(async () => {
        try {
          for (let at = 0; at < leased.length; at += BROADCAST_WINDOW) {
            const window = leased.slice(at, at + BROADCAST_WINDOW);
            // Dispatched in nonce order; answers awaited together.
            const results = await Promise.allSettled(window.map((c) => this.broadcast(c.signed)));
            const refusedAt = results.findIndex(
              (r) => r.status === 'rejected' && classifyBroadcastError(r.reason).refused,
            );
            const acceptedAfter = refusedAt >= 0 && results.some((r, k) => k > refusedAt && r.status === 'fulfilled');
            if (results.some((r) => r.status === 'rejected')) this.cachedNonce = undefined;
            if (refusedAt < 0 || acceptedAfter) {
              await this.resendLost(window.filter((_, k) => results[k]!.status === 'fulfilled'));
              for (const [k, r] of results.entries()) if (r.status === 'fulfilled') accepted(at + k);
              // Failures highest nonce first, so a nonce no later claim holds goes back to the lease.
              for (let k = results.length - 1; k >= 0; k--) {
                const r = results[k]!;
                if (r.status === 'fulfilled') continue;
                const c = window[k]!;
                const { refused, insufficientFunds } = classifyBroadcastError(r.reason);
                await this.undo(c.message, c.nonce, c.hash, r.reason, c.claim, refused).catch(() => undefined);
                settle[at + k]!.reject(
                  refused
                    ? new BroadcastRefusedError(
                        `the node refused claim ${c.hash}: ${(r.reason as Error).message.split('\n')[0]}`,
                        insufficientFunds,
                        r.reason,
                      )
                    : r.reason,
                );
              }
              continue;
            }
            // Before the refused claim: as one at a time.
            for (let k = refusedAt - 1; k >= 0; k--) {
              const r = results[k]!;
              if (r.status === 'fulfilled') continue;
              const c = window[k]!;
              await this.undo(c.message, c.nonce, c.hash, r.reason, c.claim, false).catch(() => undefined);
              settle[at + k]!.reject(r.reason);
            }
            for (let k = 0; k < refusedAt; k++) if (results[k]!.status === 'fulfilled') accepted(at + k);
            // The refused claim and everything after it in the batch (this window and the ones not sent).
            const err = (results[refusedAt] as PromiseRejectedResult).reason as unknown;
            const { insufficientFunds } = classifyBroadcastError(err);
            const first = leased[at + refusedAt]!;
            for (let j = leased.length - 1; j >= at + refusedAt; j--) {
              const r = leased[j]!;
              await this.undo(r.message, r.nonce, r.hash, err, r.claim, true).catch(() => undefined);
              const why =
                j === at + refusedAt
                  ? (err as Error).message.split('\n')[0]
                  : `an earlier claim of the batch (${first.hash}) was refused`;
              settle[j]!.reject(
                new BroadcastRefusedError(`the node refused claim ${r.hash}: ${why}`, insufficientFunds, err),
              );
            }
            return;
          }
        } finally {
          for (const c of leased) this.queued.delete(c.hash);
        }
      });
    this.queue = batch;
    return leased.map((c, i) => ({ message: c.message, hash: c.hash, nonce: c.nonce, sent: settle[i]!.sent }));
  }

  /**
   * After the node accepted a window of claims: its pending nonce names the first nonce its pool lacks. When
   * that is one of these claims, the node answered for it but does not hold it (lost on the way through a
   * proxy or load balancer, or evicted at once), and every later claim of this signer waits behind it: it is
   * sent again at once from its bytes, then the next gap is looked up, at most once per claim of the window
   * and only while the pending nonce moves on. Without this the receipt loop finds the gap only after its
   * grace (LOST_CLAIM_GRACE_MS) and an iteration, and every later claim of the signer waits that long. No
   * grace is needed here: these broadcasts have all been answered. A node behind a load balancer whose pools
   * sync by gossip may report a nonce too low; the resend then costs one "already known". One
   * eth_getTransactionCount per window (up to BROADCAST_WINDOW claims). Failures are logged: the receipt
   * loop's own rebroadcast remains the safety net.
   */
  private async resendLost(
    accepted: readonly { nonce: number; signed: string; hash: string; message: MessageRow }[],
  ): Promise<void> {
    if (accepted.length === 0) return;
    const byNonce = new Map(accepted.map((c) => [c.nonce, c]));
    let last = -1;
    try {
      for (let i = 0; i < accepted.length; i++) {
        const pending = await this.chain.provider.getTransactionCount(this.signer.address, 'pending');
        const lost = byNonce.get(pending);
        if (!lost || pending <= last) return;
        this.options.logger.warn(
          {
            message: lost.message.message_hash,
            tx: lost.hash,
            nonce: pending,
            signer: this.signer.address,
            trigger: 'after_send',
          },
          'claim transaction accepted but not held by the node (its pending nonce stops there); rebroadcasting',
        );
        await this.broadcast(lost.signed);
        this.options.metrics?.rebroadcasts.inc({ direction: this.options.direction, trigger: 'after_send' });
        last = pending;
      }
    } catch (err) {
      this.options.logger.warn(
        { signer: this.signer.address, err: (err as Error).message.split('\n')[0] },
        'checking the node for lost claims failed; the receipt loop will find them',
      );
    }
  }

  private queue: Promise<unknown> = Promise.resolve();
  private readonly queued = new Set<string>();

  /** Whether this process still has the transaction waiting in its broadcast queue. */
  isQueued(hash: string): boolean {
    return this.queued.has(hash);
  }
  private cachedNonce: { value: number; at: number } | undefined;

  /**
   * The chain's pending nonce, read at most once a second: it is only a floor under the database lease
   * (which this relayer advances itself), so a slightly stale value is safe and saves a call per claim.
   */
  private async chainNonce(): Promise<number> {
    if (this.cachedNonce && Date.now() - this.cachedNonce.at < 1_000) return this.cachedNonce.value;
    const value = await this.chain.provider.getTransactionCount(this.signer.address, 'pending');
    this.cachedNonce = { value, at: Date.now() };
    return value;
  }

  /**
   * eth_sendRawTransaction. A node that already has this very transaction (our earlier broadcast, or the
   * receipt loop's rebroadcast, got there first) is success; "nonce too low" is checked against the node.
   */
  async broadcast(signed: string): Promise<void> {
    // The last gate before any chain: a stored claim of other chains (a database of a reset testnet, a changed
    // *_RPC_URL) must not spend this signer's funds there. The persister stops such rows before they get here.
    const foreign = foreignChainReason(signed, this.chain.chainId);
    if (foreign)
      throw new ForeignChainTransactionError(
        `transaction ${transactionHash(signed)} not broadcast to ${this.chain.name}: ${foreign}`,
      );
    try {
      await this.chain.provider.send('eth_sendRawTransaction', [signed]);
    } catch (err) {
      const text = `${(err as Error).message} ${JSON.stringify((err as { info?: unknown }).info ?? '')}`;
      if (/already known|known transaction|already imported/i.test(text)) return;
      if (
        /nonce too low|nonce has already been used|NONCE_EXPIRED/i.test(text) ||
        (err as { code?: string }).code === 'NONCE_EXPIRED'
      ) {
        if (await this.chain.provider.getTransaction(transactionHash(signed))) return;
      }
      throw err;
    }
  }

  /**
   * A broadcast that failed outright: put the message back and give the nonce back when nobody leased a
   * later one; otherwise fill the hole with a zero-value self-transfer so later claims are not stuck.
   * A refused broadcast also gives back the submission it was counted as (MAX_NUMBER_OF_RETRIES counts
   * transactions that could have reached the chain); an ambiguous one keeps it.
   */
  private async undo(
    message: MessageRow,
    nonce: number,
    hash: string,
    err: unknown,
    claim: ClaimTx,
    refused: boolean,
  ): Promise<void> {
    const reason = `claim transaction ${refused ? 'refused by the node' : 'could not be sent'}: ${(err as Error).message.split('\n')[0]}`;
    const released = await returnClaim(this.repo, this.key, message, nonce, reason, refused);
    // Lack of funds is reported once by the claiming pause, not once per message.
    const level = classifyBroadcastError(err).insufficientFunds ? 'debug' : 'warn';
    this.options.logger[level](
      { message: message.message_hash, nonce, tx: hash, refused, err: (err as Error).message.split('\n')[0] },
      'claim broadcast failed; message returned for retry',
    );
    if (!released) await this.fillGap(nonce, claim);
  }

  private async fillGap(nonce: number, claim: ClaimTx): Promise<void> {
    const fees = { maxFeePerGas: claim.maxFeePerGas, maxPriorityFeePerGas: claim.maxPriorityFeePerGas };
    try {
      const signed = await this.signer.signTransaction({
        chainId: this.chain.chainId,
        nonce,
        to: this.signer.address,
        data: '0x',
        value: 0n,
        gasLimit: 21_000n,
        ...fees,
      });
      await this.broadcast(signed);
      this.options.logger.warn({ nonce }, 'filled a nonce gap with a self-transfer');
    } catch (err) {
      this.options.logger.error({ nonce, err }, 'could not fill a nonce gap; later claims wait until it is filled');
    }
  }
}
