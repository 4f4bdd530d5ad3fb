import type { Knex } from 'knex';
import type { Direction } from '../config.js';
import { Status, type MessageStatus } from '../message/status.js';
import type { RelayerRepository } from '../db/repository.js';
import type { MessagePatch, MessageRow } from '../db/rows.js';

/** One signer's nonce sequence: its `signer_nonce` row and the PENDING claims that hold its nonces. */
export interface SignerKey {
  chainId: string;
  address: string;
  direction: Direction;
  /** The direction's primary signer owns the rows from before claim_signer was recorded (null there). */
  primary: boolean;
}

/** A claim asking for a nonce: its message, and the statuses the message may still be in for it to go out. */
export interface LeaseRequest {
  message: MessageRow;
  from: readonly MessageStatus[];
}

/** A claim signed at its leased nonce, with what its message is written with when it moves to PENDING. */
export interface LeasedClaim {
  nonce: number;
  patch: MessagePatch;
}

/** What the lease asks of the sender while it holds the nonce row's lock. */
export interface LeaseHooks<C extends LeaseRequest, S extends LeasedClaim> {
  /**
   * How many claims may take nonces from `nonce` with the chain's pending nonce at `onChain` (MAX_NONCE_DIFF);
   * throwing refuses them all and rolls the lease back.
   */
  room(nonce: number, onChain: number): number;
  /** The chain's pending nonce read afresh: only a fresh one may lower the lease below what was leased. */
  freshChainNonce(): Promise<number>;
  /** Leases from `to` up to `from` were given back without a transaction and are reused. */
  reclaimed(from: number, to: number): void;
  /** Signs the kept claims at consecutive nonces from `nonce`, in their order. */
  sign(kept: readonly C[], nonce: number): Promise<S[]>;
}

const nonceRow = (repo: RelayerRepository, knex: Knex, key: SignerKey) =>
  repo.table(knex, 'signer_nonce').where({ chain_id: key.chainId, address: key.address });

/**
 * The lowest nonce not held by a PENDING claim of this signer, never below the chain's: leases above it were
 * given back without a transaction (a crash, an undone broadcast) and are reused.
 */
async function reclaimFloor<C extends LeaseRequest, S extends LeasedClaim>(
  repo: RelayerRepository,
  trx: Knex,
  key: SignerKey,
  leased: number,
  chainNonce: number,
  hooks: LeaseHooks<C, S>,
): Promise<{ floor: number; onChain: number }> {
  const row = (await repo
    .table(trx, 'message')
    .where({ direction: key.direction, status: Status.PENDING })
    // Only this signer's claims hold its nonces (rows from before claim_signer are the primary's).
    .andWhere((q) =>
      key.primary
        ? q.where('claim_signer', key.address).orWhereNull('claim_signer')
        : q.where('claim_signer', key.address),
    )
    .max({ n: 'claim_tx_nonce' })
    .first()) as { n: string | null } | undefined;
  const held = row?.n === null || row?.n === undefined ? -1 : Number(row.n);
  if (Math.max(chainNonce, held + 1) >= leased) return { floor: leased, onChain: chainNonce };
  // Only a fresh chain nonce may lower the lease (the cached one can lag behind a just-mined claim).
  const fresh = await hooks.freshChainNonce();
  return { floor: Math.max(fresh, held + 1), onChain: fresh };
}

/**
 * Leases consecutive nonces for the claims, has them signed and moves their messages to PENDING with the signed
 * transactions (a submission, through the transition table), all in one database transaction: after a crash the
 * receipt loop finds each signed claim with its message, so no nonce is lost and no message is claimed twice.
 * Messages no longer in their `from` status get no nonce; claims beyond `room` are not signed. `ensureRow`: the
 * signer's nonce row may not exist yet (it is created at the chain's nonce).
 */
export async function leaseClaims<C extends LeaseRequest, S extends LeasedClaim>(
  repo: RelayerRepository,
  key: SignerKey,
  claims: readonly C[],
  chainNonce: number,
  ensureRow: boolean,
  hooks: LeaseHooks<C, S>,
): Promise<{ leased: S[]; onChain: number; next: number }> {
  return repo.write('relayer.lease_claims', (knex) =>
    knex.transaction(async (trx) => {
      if (ensureRow) {
        await repo
          .table(trx, 'signer_nonce')
          .insert({ chain_id: key.chainId, address: key.address, next_nonce: chainNonce })
          .onConflict(['chain_id', 'address'])
          .ignore();
      }
      const row = (await nonceRow(repo, trx, key).forUpdate().first('next_nonce')) as { next_nonce: string };
      let nonce = Math.max(Number(row.next_nonce), chainNonce);
      let onChain = chainNonce;
      if (nonce > chainNonce) {
        const r = await reclaimFloor(repo, trx, key, nonce, chainNonce, hooks);
        onChain = r.onChain;
        if (r.floor < nonce) {
          hooks.reclaimed(nonce, r.floor);
          nonce = r.floor;
        }
      }
      const room = hooks.room(nonce, onChain);
      // Lock the messages and keep those still where the caller saw them: only they get nonces.
      const ids = claims.map((c) => c.message.id);
      const current = (await repo.table(trx, 'message').whereIn('id', ids).forUpdate().select('id', 'status')) as {
        id: string | number;
        status: MessageStatus;
      }[];
      const statusOf = new Map(current.map((r) => [String(r.id), r.status]));
      const kept = claims.filter((c) => c.from.includes(statusOf.get(String(c.message.id))!)).slice(0, room);
      if (kept.length === 0) return { leased: [], onChain, next: nonce };
      const leased = await hooks.sign(kept, nonce);
      const from = [...new Set(kept.flatMap((c) => c.from))];
      const changes = leased.map((s, i) => ({ id: String(kept[i]!.message.id), reason: null, patch: s.patch }));
      const moved = await repo.transitionManyIn(trx, changes, from, Status.PENDING, null, { submission: true });
      // The rows are locked and were checked above, so every one moved; anything else is a bug, and the
      // transaction (nonces included) is rolled back rather than leave a hole.
      if (moved.size !== leased.length)
        throw new Error(`nonce lease moved ${moved.size} of ${leased.length} locked messages`);
      await nonceRow(repo, trx, key).update({ next_nonce: nonce + leased.length, updated_at: trx.fn.now() });
      return { leased, onChain, next: nonce + leased.length };
    }),
  );
}

/**
 * A claim whose broadcast failed outright: its message goes back to the status it was claimed from, and the
 * nonce goes back to the lease when nobody leased a later one. `refused` (the node certainly holds no such
 * transaction) also gives back the submission it was counted as. One transaction; returns whether the nonce
 * was given back (else the caller fills the hole it leaves).
 */
export async function returnClaim(
  repo: RelayerRepository,
  key: SignerKey,
  message: MessageRow,
  nonce: number,
  reason: string,
  refused: boolean,
): Promise<boolean> {
  const released = await repo.write('relayer.return_claim', (knex) =>
    knex.transaction(async (trx): Promise<number> => {
      const back = await repo.transitionIn(
        trx,
        message.id,
        [Status.PENDING],
        message.status,
        { claim_tx_hash: null, claim_tx_nonce: null, claim_tx_raw: null },
        reason,
      );
      if (back && refused)
        await repo
          .table(trx, 'message')
          .where({ id: message.id })
          .update({ retries: trx.raw('greatest(retries - 1, 0)') });
      const n: unknown = await nonceRow(repo, trx, key)
        .where({ next_nonce: nonce + 1 })
        .update({ next_nonce: nonce });
      return Number(n);
    }),
  );
  return released > 0;
}
