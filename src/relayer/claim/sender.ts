import type { Logger } from '../../common/log.js';
import { NonceGapError } from '../broadcast-errors.js';
import type { Chain } from '../chain.js';
import type { Direction } from '../config.js';
import type { MessagePatch, MessageRow, RelayerRepository } from '../db/repository.js';
import type { MessageStatus } from '../message/status.js';
import type { RelayerMetrics } from '../metrics.js';
import type { TxSigner, UnsignedTx } from '../signer.js';
import { ClaimBroadcaster, transactionHash, type ClaimTx, type SignedClaim, type Submitted } from './broadcaster.js';
import { leaseClaims, type SignerKey } from './lease.js';

export interface PlannedClaim {
  message: MessageRow;
  /** Statuses the message may still be in for the claim to go out. */
  from: readonly MessageStatus[];
  claim: ClaimTx;
}

/** A claim signed at its leased nonce, with what its message is written with at PENDING. */
type LeasedPlannedClaim = PlannedClaim & SignedClaim & { patch: MessagePatch };

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
  ) {
    this.key = {
      chainId: chain.chainId.toString(),
      address: signer.address,
      direction: options.direction,
      primary: this.primary,
    };
    this.out = new ClaimBroadcaster({
      repo,
      chain,
      signer,
      key: this.key,
      logger: options.logger,
      metrics: options.metrics,
      failed: () => (this.cachedNonce = undefined),
    });
  }

  /** The signer's nonce row and the PENDING claims that hold its nonces (lease.ts). */
  private readonly key: SignerKey;
  /** Where signed claims go out (broadcaster.ts). */
  private readonly out: ClaimBroadcaster;

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
    const fields = { direction: this.options.direction, signer: this.signer.address };
    this.options.metrics?.noncePaused.set(fields, paused ? 1 : 0);
    if (paused === this.paused) return;
    this.paused = paused;
    if (paused) this.options.logger.error(fields, `claiming paused: ${detail}`);
    else this.options.logger.info(fields, 'claiming resumed: the database nonce is within MAX_NONCE_DIFF of the chain');
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
      freshChainNonce: () => this.chainNonce(true),
      reclaimed: (from, to) =>
        this.options.logger.warn({ direction: this.options.direction, from, to }, 'stale nonce leases reclaimed'),
      sign: (kept, nonce) => this.sign(kept, nonce),
    });
    this.nonceRowReady = true;
    if (leased.length > 0) {
      this.leasedUpTo = next;
      this.mined ??= onChain;
    }
    return this.out.inOrder(leased);
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
      const { sponsored: _sponsored, ...claim } = c.claim;
      const tx: UnsignedTx = { chainId: this.chain.chainId, nonce: nonce + i, value: 0n, ...claim };
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

  private cachedNonce: { value: number; at: number } | undefined;

  /**
   * The chain's pending nonce, read at most once a second (unless `fresh`): it is only a floor under the database
   * lease (which this relayer advances itself), so a slightly stale value is safe and saves a call per claim.
   */
  private async chainNonce(fresh = false): Promise<number> {
    if (!fresh && this.cachedNonce && Date.now() - this.cachedNonce.at < 1_000) return this.cachedNonce.value;
    const value = await this.chain.provider.getTransactionCount(this.signer.address, 'pending');
    this.cachedNonce = { value, at: Date.now() };
    return value;
  }

  /** Whether this process still has the transaction waiting in its broadcast queue. */
  isQueued(hash: string): boolean {
    return this.out.isQueued(hash);
  }

  /** eth_sendRawTransaction of a signed transaction of this chain (ClaimBroadcaster.send). */
  broadcast(signed: string): Promise<void> {
    return this.out.send(signed);
  }
}
