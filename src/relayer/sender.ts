import { Transaction } from 'ethers';
import type { Knex } from 'knex';
import { BaseError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import type { Chain } from './chain.js';
import type { MessageRow, RelayerRepository } from './db/repository.js';
import type { MessageStatus } from './db/migrations.js';
import type { TxSigner, UnsignedTx } from './signer.js';
import type { Direction } from './config.js';
import type { RelayerMetrics } from './metrics.js';

/** The database nonce ran too far ahead of the chain: claiming pauses until the chain catches up. */
export class NonceGapError extends BaseError {
  override name = 'NonceGapError';
}

/** The message changed status under us (another worker or instance acted on it): nothing was sent. */
export class MessageMovedError extends BaseError {
  override name = 'MessageMovedError';
}

/**
 * The node answered that it will not take the transaction (or the connection was never made), so it is
 * not in any pool: the nonce can be given back and no submission was used. Anything else (a timeout, a
 * reset connection, a 5xx, an unknown error) may hide an accepted transaction and is treated as such.
 */
export class BroadcastRefusedError extends BaseError {
  override name = 'BroadcastRefusedError';
  constructor(
    message: string,
    readonly insufficientFunds: boolean,
    cause: unknown,
  ) {
    super(message, { cause });
  }
}

const REFUSALS = /insufficient funds|underpriced|fee per gas less than|fee cap less than|less than block base fee|nonce too (low|high)|nonce has already been used|intrinsic gas too low|exceeds block gas limit|exceeds the configured cap|invalid chain ?id|invalid sender/i;

/** Whether a failed eth_sendRawTransaction certainly left no transaction in the node's pool. */
export function classifyBroadcastError(err: unknown): { refused: boolean; insufficientFunds: boolean } {
  const e = err as { code?: unknown; message?: string; info?: unknown; error?: unknown; cause?: { code?: unknown } };
  const text = `${e?.message ?? String(err)} ${JSON.stringify(e?.info ?? '')} ${JSON.stringify(e?.error ?? '')}`;
  const insufficientFunds = e?.code === 'INSUFFICIENT_FUNDS' || /insufficient funds/i.test(text);
  const connectionRefused = e?.code === 'ECONNREFUSED' || e?.cause?.code === 'ECONNREFUSED';
  const refused = insufficientFunds || connectionRefused || e?.code === 'NONCE_EXPIRED' || e?.code === 'REPLACEMENT_UNDERPRICED' || REFUSALS.test(text);
  return { refused, insufficientFunds };
}

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
    private readonly options: { maxNonceDiff: number; logger: Logger; metrics?: RelayerMetrics; direction: Direction },
  ) {}

  private paused = false;

  /** Logs the pause once when it starts and once when it ends; the gauge follows it. */
  private setPaused(paused: boolean, detail?: string): void {
    this.options.metrics?.noncePaused.set({ direction: this.options.direction }, paused ? 1 : 0);
    if (paused === this.paused) return;
    this.paused = paused;
    if (paused) this.options.logger.error({ direction: this.options.direction, signer: this.signer.address }, `claiming paused: ${detail}`);
    else this.options.logger.info({ direction: this.options.direction, signer: this.signer.address }, 'claiming resumed: the database nonce is within MAX_NONCE_DIFF of the chain');
  }

  /**
   * The lowest nonce not held by a PENDING claim of this direction, never below the chain's: leases above
   * it were given back without a transaction (a crash, an undone broadcast) and are reused.
   */
  private async reclaimFloor(trx: Knex, leased: number, chainNonce: number): Promise<{ floor: number; onChain: number }> {
    const row = (await this.repo.t(trx, 'message').where({ direction: this.options.direction, status: 'PENDING' }).max({ n: 'claim_tx_nonce' }).first()) as { n: string | null } | undefined;
    const held = row?.n === null || row?.n === undefined ? -1 : Number(row.n);
    if (Math.max(chainNonce, held + 1) >= leased) return { floor: leased, onChain: chainNonce };
    // Only a fresh chain nonce may lower the lease (the cached one can lag behind a just-mined claim).
    const fresh = await this.chain.provider.getTransactionCount(this.signer.address, 'pending');
    this.cachedNonce = { value: fresh, at: Date.now() };
    return { floor: Math.max(fresh, held + 1), onChain: fresh };
  }

  private nonceRow(knex: Knex) {
    return this.repo.t(knex, 'signer_nonce').where({ chain_id: this.chain.chainId.toString(), address: this.signer.address });
  }

  async submit(message: MessageRow, from: readonly MessageStatus[], claim: ClaimTx): Promise<{ hash: string; nonce: number; sent: Promise<void> }> {
    const chainNonce = await this.chainNonce();
    const { signed, hash, nonce } = await this.repo.db.run((knex) =>
      knex.transaction(async (trx) => {
        await this.repo
          .t(trx, 'signer_nonce')
          .insert({ chain_id: this.chain.chainId.toString(), address: this.signer.address, next_nonce: chainNonce })
          .onConflict(['chain_id', 'address'])
          .ignore();
        const row = (await this.nonceRow(trx).forUpdate().first('next_nonce')) as { next_nonce: string };
        let nonce = Math.max(Number(row.next_nonce), chainNonce);
        let onChain = chainNonce;
        if (nonce > chainNonce) {
          const r = await this.reclaimFloor(trx, nonce, chainNonce);
          const floor = r.floor;
          onChain = r.onChain;
          if (floor < nonce) {
            this.options.logger.warn({ direction: this.options.direction, from: nonce, to: floor }, 'stale nonce leases reclaimed');
            nonce = floor;
          }
        }
        if (nonce - onChain > this.options.maxNonceDiff) {
          const detail = `the database nonce ${nonce} is ${nonce - onChain} ahead of the chain's ${onChain} for ${this.signer.address}, more than MAX_NONCE_DIFF (${this.options.maxNonceDiff}); claiming resumes when the chain catches up`;
          this.setPaused(true, detail);
          throw new NonceGapError(detail);
        }
        this.setPaused(false);
        const tx: UnsignedTx = { chainId: this.chain.chainId, nonce, value: 0n, ...claim };
        const signed = await this.signer.signTransaction(tx);
        const hash = Transaction.from(signed).hash!;
        const moved = await this.repo.transitionIn(trx, message.id, from, 'PENDING', {
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
        });
        if (!moved) throw new MessageMovedError(`message ${message.message_hash} is no longer ${from.join('/')}`);
        await this.repo.t(trx, 'message').where({ id: message.id }).update({ retries: trx.raw('retries + 1'), claim_tx_created_at: trx.fn.now() });
        await this.nonceRow(trx).update({ next_nonce: nonce + 1, updated_at: trx.fn.now() });
        return { signed, hash, nonce };
      }),
    );
    // Broadcasts go out in nonce order but overlap with leasing the next nonce; `sent` settles once this
    // one was accepted (or undone).
    this.queued.add(hash);
    const sent: Promise<void> = this.queue.catch(() => undefined).then(async () => {
      try {
        await this.broadcast(signed);
        // Counted here, once the node holds it: a refused broadcast is no claim.
        this.options.metrics?.claimsSent.inc({ direction: this.options.direction, sponsored: String(claim.sponsored) });
      } catch (err) {
        this.cachedNonce = undefined;
        const { refused, insufficientFunds } = classifyBroadcastError(err);
        await this.undo(message, nonce, hash, err, claim, refused);
        if (refused) throw new BroadcastRefusedError(`the node refused claim ${hash}: ${(err as Error).message.split('\n')[0]}`, insufficientFunds, err);
        throw err;
      } finally {
        this.queued.delete(hash);
      }
    });
    this.queue = sent;
    // Callers await `sent` when they need the outcome; during shutdown nobody may, and a broadcast cancelled
    // by a destroyed provider must not surface as an unhandled rejection (undo() has already recorded it).
    sent.catch(() => undefined);
    return { hash, nonce, sent };
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
    try {
      await this.chain.provider.send('eth_sendRawTransaction', [signed]);
    } catch (err) {
      const text = `${(err as Error).message} ${JSON.stringify((err as { info?: unknown }).info ?? '')}`;
      if (/already known|known transaction|already imported/i.test(text)) return;
      if (/nonce too low|nonce has already been used|NONCE_EXPIRED/i.test(text) || (err as { code?: string }).code === 'NONCE_EXPIRED') {
        if (await this.chain.provider.getTransaction(Transaction.from(signed).hash!)) return;
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
  private async undo(message: MessageRow, nonce: number, hash: string, err: unknown, claim: ClaimTx, refused: boolean): Promise<void> {
    const reason = `claim transaction ${refused ? 'refused by the node' : 'could not be sent'}: ${(err as Error).message.split('\n')[0]}`;
    const released = await this.repo.db.run((knex) =>
      knex.transaction(async (trx) => {
        const back = await this.repo.transitionIn(trx, message.id, ['PENDING'], message.status, { claim_tx_hash: null, claim_tx_nonce: null, claim_tx_raw: null }, reason);
        if (back && refused) await this.repo.t(trx, 'message').where({ id: message.id }).update({ retries: trx.raw('greatest(retries - 1, 0)') });
        const n: unknown = await this.nonceRow(trx).where({ next_nonce: nonce + 1 }).update({ next_nonce: nonce });
        return Number(n);
      }),
    );
    // Lack of funds is reported once by the claiming pause, not once per message.
    const level = classifyBroadcastError(err).insufficientFunds ? 'debug' : 'warn';
    this.options.logger[level]({ message: message.message_hash, nonce, tx: hash, refused, err: (err as Error).message.split('\n')[0] }, 'claim broadcast failed; message returned for retry');
    if (released === 0) await this.fillGap(nonce, claim);
  }

  private async fillGap(nonce: number, claim: ClaimTx): Promise<void> {
    const fees = { maxFeePerGas: claim.maxFeePerGas, maxPriorityFeePerGas: claim.maxPriorityFeePerGas };
    try {
      const signed = await this.signer.signTransaction({ chainId: this.chain.chainId, nonce, to: this.signer.address, data: '0x', value: 0n, gasLimit: 21_000n, ...fees });
      await this.broadcast(signed);
      this.options.logger.warn({ nonce }, 'filled a nonce gap with a self-transfer');
    } catch (err) {
      this.options.logger.error({ nonce, err }, 'could not fill a nonce gap; later claims wait until it is filled');
    }
  }
}
