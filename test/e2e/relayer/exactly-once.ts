import { id, type JsonRpcProvider } from 'ethers';
import { loadDatabaseConfig } from '../../../src/common/db/config.js';
import { createDbClient, type DbClient } from '../../../src/common/db/client.js';

/**
 * The two checks every relayer fault test ends with: each message claimed exactly once on its destination
 * (one MessageClaimed event), and no message left PENDING without a live transaction (its claim_tx_hash
 * known to the destination node, pending or mined), which is what lets a restarted relayer finish it.
 */
export type Direction = 'L1_TO_L2' | 'L2_TO_L1';

export interface PendingClaim {
  direction: Direction;
  messageHash: string;
  claimTxHash: string | null;
}

/** MessageClaimed events per message hash on the message service at `contract`, from `fromBlock`. */
export async function claimCounts(
  provider: JsonRpcProvider,
  contract: string,
  hashes: string[],
  fromBlock = 0,
): Promise<Map<string, number>> {
  const logs = await provider.getLogs({ address: contract, topics: [id('MessageClaimed(bytes32)')], fromBlock });
  const counts = new Map(hashes.map((h) => [h.toLowerCase(), 0]));
  for (const l of logs) {
    const h = l.topics[1]!.toLowerCase();
    if (counts.has(h)) counts.set(h, counts.get(h)! + 1);
  }
  return counts;
}

/** PENDING messages as the relayer API at `url` reports them (all pages). */
export async function pendingFromApi(url: string): Promise<PendingClaim[]> {
  const out: PendingClaim[] = [];
  for (let page = 1; ; page++) {
    const body = (await (await fetch(`${url}/messages?status=PENDING&limit=100&page=${page}`)).json()) as {
      data: PendingClaim[];
      meta: { totalItemsCount: number };
    };
    out.push(
      ...body.data.map((r) => ({ direction: r.direction, messageHash: r.messageHash, claimTxHash: r.claimTxHash })),
    );
    if (out.length >= body.meta.totalItemsCount || body.data.length === 0) return out;
  }
}

/** PENDING messages read from the relayer's tables (e.g. once its process has exited). */
export async function pendingFromDb(db: DbClient, schema = 'relayer'): Promise<PendingClaim[]> {
  const rows = (await db
    .knex(`${schema}.message`)
    .where({ status: 'PENDING' })
    .select('direction', 'message_hash', 'claim_tx_hash')) as {
    direction: Direction;
    message_hash: string;
    claim_tx_hash: string | null;
  }[];
  return rows.map((r) => ({ direction: r.direction, messageHash: r.message_hash, claimTxHash: r.claim_tx_hash }));
}

/** The same, from the database named by DATABASE_* variables (a PGlite directory or a Postgres database). */
export async function pendingFromDatabase(env: Record<string, string>): Promise<PendingClaim[]> {
  const db = await createDbClient(loadDatabaseConfig(env), { poolMax: 1 });
  try {
    return await pendingFromDb(db);
  } finally {
    await db.close();
  }
}

/**
 * The PENDING claims whose transaction the destination node does not know (neither in its pool nor
 * mined), as "direction:hash (tx)" lines: a fault test expects none.
 */
export async function deadPendingClaims(
  rows: PendingClaim[],
  chains: { l1: JsonRpcProvider; l2: JsonRpcProvider },
): Promise<string[]> {
  const dead: string[] = [];
  for (const r of rows) {
    const destination = r.direction === 'L1_TO_L2' ? chains.l2 : chains.l1;
    const known = r.claimTxHash ? await destination.getTransaction(r.claimTxHash) : null;
    if (!known) dead.push(`${r.direction}:${r.messageHash} (${r.claimTxHash ?? 'no claim transaction'})`);
  }
  return dead;
}
