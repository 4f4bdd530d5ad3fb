import type { Knex } from 'knex';
import { Status, type MessageStatus } from '../message/status.js';
import { UNFINISHED } from '../message/transitions.js';
import type { RelayerRepository } from './repository.js';
import { ADMIN_ACTOR } from './admin.js';

/** What identifies a layer's chain for the relayer: a reset testnet or a fork keeps the id, not the genesis. */
export interface ChainIdentity {
  layer: 'L1' | 'L2';
  chainId: string;
  genesisHash: string;
  contractAddress: string;
}

/** A row of chain_pin. */
type PinRow = { layer: string; chain_id: string; genesis_hash: string; contract_address: string };

const identityOf = (r: PinRow): ChainIdentity => ({
  layer: r.layer as ChainIdentity['layer'],
  chainId: r.chain_id,
  genesisHash: r.genesis_hash,
  contractAddress: r.contract_address,
});

/**
 * The database was written for other chains than the ones configured now. Its one-line message names each
 * difference (stored vs now) and the two ways out; the relayer exits 1 on it before any direction starts.
 */
export class ChainPinMismatchError extends Error {
  override name = 'ChainPinMismatchError';
  constructor(readonly differences: string[]) {
    super(
      `the relayer database is pinned to other chains: ${differences.join('; ')}. ` +
        'Nothing was sent. Point DATABASE_* at a database of these chains (or a new one), or, if the chains were ' +
        'really replaced (a reset testnet), stop every relayer and run `l2stack relayer reset-chain-pin` (see its --help)',
    );
  }
}

/**
 * Records the identity of each layer on first start and compares it on every later one. Insert-if-absent, then
 * read: two replicas starting together on an empty database agree on one pin.
 */
export async function checkChainPin(
  repo: RelayerRepository,
  now: readonly ChainIdentity[],
): Promise<{ pinnedNow: string[] }> {
  const inserted = await repo.write('relayer.pin_chains', (knex) =>
    repo
      .table(knex, 'chain_pin')
      .insert(
        now.map((c) => ({
          layer: c.layer,
          chain_id: c.chainId,
          genesis_hash: c.genesisHash.toLowerCase(),
          contract_address: c.contractAddress.toLowerCase(),
        })),
      )
      .onConflict('layer')
      .ignore()
      .returning<{ layer: string }[]>('layer'),
  );
  const stored = await repo.read('relayer.read_chain_pins', (knex) =>
    repo.table(knex, 'chain_pin').select<PinRow[]>('*'),
  );
  const differences = pinDifferences(stored.map(identityOf), now);
  if (differences.length > 0) throw new ChainPinMismatchError(differences);
  return { pinnedNow: inserted.map((r) => r.layer) };
}

/**
 * Each way `now` differs from the `pinned` identity of its layer ("L1 chain id stored 1, now 2"); a layer with no
 * pin yet differs in nothing. The one comparison of the start's check and of the running relayer's (pin-watch.ts).
 */
export function pinDifferences(pinned: readonly ChainIdentity[], now: readonly ChainIdentity[]): string[] {
  const differences: string[] = [];
  for (const c of now) {
    const s = pinned.find((r) => r.layer === c.layer);
    if (!s) continue;
    if (s.chainId !== c.chainId) differences.push(`${c.layer} chain id stored ${s.chainId}, now ${c.chainId}`);
    if (s.genesisHash.toLowerCase() !== c.genesisHash.toLowerCase())
      differences.push(
        `${c.layer} genesis block hash stored ${s.genesisHash.toLowerCase()}, now ${c.genesisHash.toLowerCase()}`,
      );
    if (s.contractAddress.toLowerCase() !== c.contractAddress.toLowerCase()) {
      differences.push(
        `${c.layer}_CONTRACT_ADDRESS stored ${s.contractAddress.toLowerCase()}, now ${c.contractAddress.toLowerCase()}`,
      );
    }
  }
  return differences;
}

export interface ResetOutcome {
  dropped: ChainIdentity[];
  /** Unfinished messages by status (when refused), or moved to NEEDS_MANUAL_INTERVENTION (when abandoned). */
  unfinished: Record<string, number>;
  abandoned: number;
  refused: boolean;
}

/**
 * `l2stack relayer reset-chain-pin`: forgets the pinned chains so the next start pins the configured ones.
 * Messages are never deleted. Unfinished ones belong to the old chains (their proofs, anchoring and signed claims
 * mean nothing on new ones), so the reset is refused while any exist, unless `abandon` is given: then each moves to
 * NEEDS_MANUAL_INTERVENTION with the reason in its history (kept for the record, never sent again; `requeue` can
 * put one back). What only described the old chains goes with the pin: listener and finalization cursors (block
 * numbers of the old chains), leased nonces per signer (the old chains' nonces) and indexed L1 finalizations.
 * One transaction: either all of it or nothing.
 */
export async function resetChainPin(repo: RelayerRepository, options: { abandon: boolean }): Promise<ResetOutcome> {
  return repo.write('relayer.reset_chain_pin', (knex) =>
    knex.transaction(async (trx: Knex.Transaction): Promise<ResetOutcome> => {
      const dropped = (await repo.table(trx, 'chain_pin').forUpdate().select<PinRow[]>('*')).map(identityOf);
      const counts = await repo
        .table(trx, 'message')
        .whereIn('status', UNFINISHED)
        .groupBy('status')
        .select<{ status: string; n: string }[]>('status', trx.raw('count(*) as n'));
      const unfinished = Object.fromEntries(counts.map((c) => [c.status, Number(c.n)]));
      if (counts.length > 0 && !options.abandon) return { dropped, unfinished, abandoned: 0, refused: true };
      let abandoned = 0;
      if (counts.length > 0) {
        const pinText =
          dropped.map((p) => `${p.layer} chain ${p.chainId} genesis ${p.genesisHash}`).join(', ') || 'no pin recorded';
        const rows = await repo
          .table(trx, 'message')
          .whereIn('status', UNFINISHED)
          .select<{ id: string; status: string }[]>('id', 'status');
        for (const r of rows) {
          const reason = `abandoned by operator at reset-chain-pin (was ${r.status}; it belonged to ${pinText}): never sent again`;
          await repo.transitionIn(
            trx,
            r.id,
            [r.status as MessageStatus],
            Status.NEEDS_MANUAL_INTERVENTION,
            {},
            reason,
            { actor: ADMIN_ACTOR },
          );
          abandoned++;
        }
      }
      for (const table of ['cursor', 'signer_nonce', 'finalization', 'chain_pin'])
        await repo.table(trx, table).delete();
      return { dropped, unfinished, abandoned, refused: false };
    }),
  );
}
