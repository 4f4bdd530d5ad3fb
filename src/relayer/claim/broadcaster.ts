import { bytesToHex, hexToBytes } from '../../common/eth/hex.js';
import { keccak256 } from '../../common/eth/keccak.js';
import type { Logger } from '../../common/log.js';
import { BroadcastRefusedError, ForeignChainTransactionError, classifyBroadcastError } from '../broadcast-errors.js';
import type { Chain } from '../chain.js';
import type { MessageRow, RelayerRepository } from '../db/repository.js';
import type { RelayerMetrics } from '../metrics.js';
import type { TxSigner, UnsignedTx } from '../signer.js';
import { foreignChainReason } from '../tx-chain-id.js';
import { returnClaim, type SignerKey } from './lease.js';

/** Claims of a batch on their way to the node at once (see inOrder). */
const BROADCAST_WINDOW = 32;
/** Gas of a zero-value transfer to ourselves: what fills a nonce gap, or cancels a claim at its nonce. */
export const SELF_TRANSFER_GAS = 21_000n;

/** A planned claim's transaction, but its chain, nonce and (zero) value; `sponsored`: the relayer pays for it. */
export type ClaimTx = Omit<UnsignedTx, 'chainId' | 'nonce' | 'value'> & { sponsored: boolean };

/** A claim signed at its leased nonce, recorded PENDING, on its way to the node. */
export interface SignedClaim {
  message: MessageRow;
  claim: ClaimTx;
  signed: string;
  hash: string;
  nonce: number;
}

/** A claim on its way to the node, as the sender hands it back. */
export type Submitted = Pick<SignedClaim, 'message' | 'hash' | 'nonce'> & {
  /** Settles once the node accepted the transaction, or rejects once it was undone. */
  sent: Promise<void>;
};

/**
 * The hash of a signed transaction is the keccak of its bytes: no need to parse it back, and the fast keccak over bytes
 * skips ethers' hex round trips.
 */
export const transactionHash = (signed: string) => bytesToHex(keccak256(hexToBytes(signed, 'signed transaction')));

const firstLine = (err: unknown): string => (err as Error).message.split('\n')[0]!;

/** What a refused claim's `sent` rejects with: `why` it was refused, `err` the node's answer. */
const refusal = (c: SignedClaim, why: string, err: unknown) =>
  new BroadcastRefusedError(
    `the node refused claim ${c.hash}: ${why}`,
    classifyBroadcastError(err).insufficientFunds,
    err,
  );

/** A claim's `sent` and how to settle it. */
function settleable() {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const sent = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Callers await `sent` when they need the outcome; during shutdown nobody may, and a broadcast cancelled by a
  // destroyed provider must not surface as an unhandled rejection (undo() has already recorded it).
  sent.catch(() => undefined);
  return { sent, resolve, reject };
}
type Settle = ReturnType<typeof settleable>;

/**
 * The way of one signer's claims to the node: batches in nonce order, one after another, and what failed on the way
 * given back (the message returned, the nonce given back or its hole filled).
 */
export class ClaimBroadcaster {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly queued = new Set<string>();

  constructor(
    private readonly o: {
      repo: RelayerRepository;
      chain: Chain;
      signer: TxSigner;
      key: SignerKey;
      logger: Logger;
      metrics?: RelayerMetrics;
      /** A broadcast failed: the node's pending nonce as last read may be wrong. */
      failed(): void;
    },
  ) {}

  /** Whether this process still has the transaction waiting in its broadcast queue. */
  isQueued(hash: string): boolean {
    return this.queued.has(hash);
  }

  /**
   * Broadcasts leased claims, overlapping with the next lease; each `sent` settles once its claim was accepted (or
   * undone). The claims of a batch go out BROADCAST_WINDOW at a time without waiting for each answer (a node keeps a
   * transaction whose lower nonce is still on its way, as it keeps any future nonce): one at a time, the batch took the
   * sum of its round trips, which bounded claims/s (issue 12). A claim the node refuses outright, with none of the
   * later ones accepted, stops the rest of its batch: their higher nonces could not be mined before it, so they are
   * given back too, highest first, so the lease returns to the refused nonce with no hole. When a later one was
   * accepted (a refusal of that transaction alone), each failed claim is given back on its own, its nonce filled (see
   * undo()).
   */
  inOrder(leased: readonly SignedClaim[]): Submitted[] {
    const settle = leased.map(settleable);
    for (const c of leased) this.queued.add(c.hash);
    const batch = this.queue
      .catch(() => undefined)
      .then(async () => {
        try {
          for (let at = 0; at < leased.length; at += BROADCAST_WINDOW)
            if (!(await this.sendWindow(leased, at, settle))) return;
        } finally {
          for (const c of leased) this.queued.delete(c.hash);
        }
      });
    this.queue = batch;
    return leased.map((c, i) => ({ message: c.message, hash: c.hash, nonce: c.nonce, sent: settle[i]!.sent }));
  }

  /** The window of the batch from `at`, its answers settled; false when a refusal stopped the batch. */
  private async sendWindow(leased: readonly SignedClaim[], at: number, settle: Settle[]): Promise<boolean> {
    const window = leased.slice(at, at + BROADCAST_WINDOW);
    // Dispatched in nonce order; answers awaited together.
    const results = await Promise.allSettled(window.map((c) => this.send(c.signed)));
    const refusedAt = results.findIndex((r) => r.status === 'rejected' && classifyBroadcastError(r.reason).refused);
    const acceptedAfter = refusedAt >= 0 && results.some((r, k) => k > refusedAt && r.status === 'fulfilled');
    if (results.some((r) => r.status === 'rejected')) this.o.failed();
    const accept = (k: number) => {
      if (results[k]!.status !== 'fulfilled') return;
      const sponsored = String(window[k]!.claim.sponsored);
      this.o.metrics?.claimsSent.inc({ direction: this.o.key.direction, sponsored, signer: this.o.signer.address });
      settle[at + k]!.resolve();
    };
    if (refusedAt < 0 || acceptedAfter) {
      await this.resendLost(window.filter((_, k) => results[k]!.status === 'fulfilled'));
      for (let k = 0; k < results.length; k++) accept(k);
      await this.giveBack(window, results, settle.slice(at), results.length);
      return true;
    }
    // Before the refused claim: as one at a time (none of those failures is a refusal).
    await this.giveBack(window, results, settle.slice(at), refusedAt);
    for (let k = 0; k < refusedAt; k++) accept(k);
    // The refused claim and everything after it in the batch (this window and the ones not sent).
    const err = (results[refusedAt] as PromiseRejectedResult).reason as unknown;
    const first = leased[at + refusedAt]!;
    for (let j = leased.length - 1; j >= at + refusedAt; j--) {
      const c = leased[j]!;
      await this.undo(c, err, true).catch(() => undefined);
      const why = j === at + refusedAt ? firstLine(err) : `an earlier claim of the batch (${first.hash}) was refused`;
      settle[j]!.reject(refusal(c, why, err));
    }
    return false;
  }

  /**
   * The failed claims of the window below `end` given back, highest nonce first, so a nonce no later claim holds goes
   * back to the lease.
   */
  private async giveBack(
    window: readonly SignedClaim[],
    results: PromiseSettledResult<void>[],
    settle: Settle[],
    end: number,
  ): Promise<void> {
    for (let k = end - 1; k >= 0; k--) {
      const r = results[k]!;
      if (r.status === 'fulfilled') continue;
      const c = window[k]!;
      const { refused } = classifyBroadcastError(r.reason);
      await this.undo(c, r.reason, refused).catch(() => undefined);
      settle[k]!.reject(refused ? refusal(c, firstLine(r.reason), r.reason) : r.reason);
    }
  }

  /**
   * After the node accepted a window of claims: its pending nonce names the first nonce its pool lacks. When that is
   * one of these claims, the node answered for it but does not hold it (lost on the way through a proxy or load
   * balancer, or evicted at once), and every later claim of this signer waits behind it: it is sent again at once from
   * its bytes, then the next gap is looked up, at most once per claim of the window and only while the pending nonce
   * moves on. Without this the receipt loop finds the gap only after its grace (LOST_CLAIM_GRACE_MS) and an iteration,
   * and every later claim of the signer waits that long. No grace is needed here: these broadcasts have all been
   * answered. A node behind a load balancer whose pools sync by gossip may report a nonce too low; the resend then
   * costs one "already known". One eth_getTransactionCount per window (up to BROADCAST_WINDOW claims). Failures are
   * logged: the receipt loop's own rebroadcast remains the safety net.
   */
  private async resendLost(accepted: readonly SignedClaim[]): Promise<void> {
    if (accepted.length === 0) return;
    const byNonce = new Map(accepted.map((c) => [c.nonce, c]));
    let last = -1;
    try {
      for (let i = 0; i < accepted.length; i++) {
        const pending = await this.o.chain.provider.getTransactionCount(this.o.signer.address, 'pending');
        const lost = byNonce.get(pending);
        if (!lost || pending <= last) return;
        this.o.logger.warn(
          {
            message: lost.message.message_hash,
            tx: lost.hash,
            nonce: pending,
            signer: this.o.signer.address,
            trigger: 'after_send',
          },
          'claim transaction accepted but not held by the node (its pending nonce stops there); rebroadcasting',
        );
        await this.send(lost.signed);
        this.o.metrics?.rebroadcasts.inc({ direction: this.o.key.direction, trigger: 'after_send' });
        last = pending;
      }
    } catch (err) {
      this.o.logger.warn(
        { signer: this.o.signer.address, err: firstLine(err) },
        'checking the node for lost claims failed; the receipt loop will find them',
      );
    }
  }

  /**
   * eth_sendRawTransaction. A node that already has this very transaction (our earlier broadcast, or the receipt loop's
   * rebroadcast, got there first) is success; "nonce too low" is checked against the node.
   */
  async send(signed: string): Promise<void> {
    const { chain } = this.o;
    // The last gate before any chain: a stored claim of other chains (a database of a reset testnet, a changed
    // *_RPC_URL) must not spend this signer's funds there. The persister stops such rows before they get here.
    const foreign = foreignChainReason(signed, chain.chainId);
    if (foreign)
      throw new ForeignChainTransactionError(
        `transaction ${transactionHash(signed)} not broadcast to ${chain.name}: ${foreign}`,
      );
    try {
      await chain.provider.send('eth_sendRawTransaction', [signed]);
    } catch (err) {
      const text = `${(err as Error).message} ${JSON.stringify((err as { info?: unknown }).info ?? '')}`;
      if (/already known|known transaction|already imported/i.test(text)) return;
      if (
        /nonce too low|nonce has already been used|NONCE_EXPIRED/i.test(text) ||
        (err as { code?: string }).code === 'NONCE_EXPIRED'
      ) {
        if (await chain.provider.getTransaction(transactionHash(signed))) return;
      }
      throw err;
    }
  }

  /**
   * A broadcast that failed outright: put the message back and give the nonce back when nobody leased a later one;
   * otherwise fill the hole with a zero-value self-transfer so later claims are not stuck. A refused broadcast also
   * gives back the submission it was counted as (MAX_NUMBER_OF_RETRIES counts transactions that could have reached the
   * chain); an ambiguous one keeps it.
   */
  private async undo(c: SignedClaim, err: unknown, refused: boolean): Promise<void> {
    const reason = `claim transaction ${refused ? 'refused by the node' : 'could not be sent'}: ${firstLine(err)}`;
    const released = await returnClaim(this.o.repo, this.o.key, c.message, c.nonce, reason, refused);
    // Lack of funds is reported once by the claiming pause, not once per message.
    const level = classifyBroadcastError(err).insufficientFunds ? 'debug' : 'warn';
    this.o.logger[level](
      { message: c.message.message_hash, nonce: c.nonce, tx: c.hash, refused, err: firstLine(err) },
      'claim broadcast failed; message returned for retry',
    );
    if (!released) await this.fillGap(c.nonce, c.claim);
  }

  private async fillGap(nonce: number, claim: ClaimTx): Promise<void> {
    const fees = { maxFeePerGas: claim.maxFeePerGas, maxPriorityFeePerGas: claim.maxPriorityFeePerGas };
    try {
      const signed = await this.o.signer.signTransaction({
        chainId: this.o.chain.chainId,
        nonce,
        to: this.o.signer.address,
        data: '0x',
        value: 0n,
        gasLimit: SELF_TRANSFER_GAS,
        ...fees,
      });
      await this.send(signed);
      this.o.logger.warn({ nonce }, 'filled a nonce gap with a self-transfer');
    } catch (err) {
      this.o.logger.error({ nonce, err }, 'could not fill a nonce gap; later claims wait until it is filled');
    }
  }
}
