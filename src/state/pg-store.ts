import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { DbClient } from '../common/db/client.js';
import { bareHex, type Bytes } from './bytes.js';
import type { BatchingStore, StagedBlock } from './staged-store.js';
import { runStatement } from './statement.js';
import {
  MAX_KEYS_PER_STATEMENT,
  proofReadsOf,
  proofStatementSql,
  unpackRows,
  type ProofStatementRow,
} from './proof-statement.js';
import type {
  BlockRecord,
  FinalizationRecord,
  KeyEntry,
  ProofReads,
  ProofRequest,
  ReadOptions,
  StateReader,
  TreeId,
  TreeWrites,
} from './store.js';

/**
 * VersionedStore on Postgres or PGlite (knex). Reads are index seeks on the primary keys: "latest version
 * ≤ N" of a node is one backward step of (tree, pos, block); the floor key walks (tree, hkey, block)
 * backwards to the first key live at N. Writes go in as whole arrays (unnest), so a block is a handful of
 * statements in one transaction whatever its size.
 */
const treeHex = (tree: TreeId): string => (tree === '' ? '' : tree.slice(2).toLowerCase());
const bare = (hex: string): string => hex.slice(2);
const CHUNK = 20_000;

/**
 * A row as read at settled blocks: `value` (null: cleared or never written) is the latest version ≤ any
 * block in [from, through] (`from` its version's block, -1 when there is none; `through` the newest block
 * it was read at). Settled blocks never change, so this holds for good (pruning only drops versions of
 * blocks the proof backend no longer serves).
 */
interface SettledRow {
  from: bigint;
  through: bigint;
  value: Bytes | null;
}
/** Rows kept from reads at settled blocks (about 250 bytes each); past it the cache starts over. */
const SETTLED_ROWS = 200_000;

/** One read statement with bindings: inside a snapshot transaction, or alone on the pool (headReader). */
type RawQuery = <T>(sql: string, bindings: readonly Knex.RawBinding[]) => Promise<T>;
const rawOn =
  (knex: Knex): RawQuery =>
  async <T>(sql: string, bindings: readonly Knex.RawBinding[]) =>
    (await knex.raw(sql, [...bindings])) as T;

export class PgStore implements BatchingStore {
  /** A table of this store's schema, qualified (`<schema>.nodes`). */
  private readonly table: (name: string) => string;

  constructor(
    private readonly db: DbClient,
    readonly schema: string,
  ) {
    this.table = (name) => `${schema}.${name}`;
  }

  /** Rows read at settled blocks, per tree and position: proofs at the finalized block share the upper levels. */
  private settled = new Map<TreeId, Map<number, SettledRow>>();
  private settledRows = 0;

  read<T>(block: bigint, fn: (reader: StateReader) => Promise<T>, options?: ReadOptions): Promise<T> {
    return this.db.query('state.read', (knex) =>
      knex.transaction((trx) => fn(this.reader(rawOn(trx), block, options?.settled ?? false)), {
        isolationLevel: 'repeatable read',
        readOnly: true,
      } as Knex.TransactionConfig),
    );
  }

  /** The proof statement per key count, named on a session by its text's hash (no two schemas collide). */
  private readonly proofStatements = new Map<number, { name: string; text: string; types: string[] }>();

  /**
   * See VersionedStore.proofReads: the rows of the proofs' paths in one statement (proof-statement.ts),
   * or one per MAX_KEYS_PER_STATEMENT keys.
   */
  async proofReads(block: bigint, requests: readonly ProofRequest[]): Promise<ProofReads> {
    const rows: ProofStatementRow[] = [];
    for (let at = 0; at < requests.length; at += MAX_KEYS_PER_STATEMENT) {
      const part = requests.slice(at, at + MAX_KEYS_PER_STATEMENT);
      let st = this.proofStatements.get(part.length);
      if (!st) {
        const text = proofStatementSql(this.table, part.length);
        const name = `l2s_proof_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
        this.proofStatements.set(
          part.length,
          (st = { name, text, types: [...part.flatMap(() => ['text', 'text']), 'bigint'] }),
        );
      }
      const values = [...part.flatMap((r) => [treeHex(r.tree), bare(r.hKey).toLowerCase()]), block.toString()];
      const [answer] = await runStatement<{ packed: Uint8Array | null }>(this.db, { ...st, values });
      for (const row of unpackRows(answer?.packed ?? null))
        rows.push({ ...row, ord: row.ord > 0 ? row.ord + at : row.ord - at });
    }
    return proofReadsOf(requests, rows);
  }

  /** Positions answered from the settled cache at `block` (into `out`); returns the ones to read. */
  private fromSettled(tree: TreeId, positions: readonly number[], block: bigint, out: Map<number, Bytes>): number[] {
    const rows = this.settled.get(tree);
    if (!rows) return [...positions];
    const rest: number[] = [];
    for (const p of positions) {
      const r = rows.get(p);
      if (r && r.from <= block && block <= r.through) {
        if (r.value) out.set(p, r.value);
      } else rest.push(p);
    }
    return rest;
  }

  private keepSettled(tree: TreeId, got: { pos: number; from: bigint; value: Bytes | null }[], block: bigint): void {
    if (this.settledRows + got.length > SETTLED_ROWS) {
      this.settled = new Map();
      this.settledRows = 0;
    }
    let rows = this.settled.get(tree);
    if (!rows) this.settled.set(tree, (rows = new Map()));
    for (const g of got) {
      const r = rows.get(g.pos);
      if (r && r.from === g.from) {
        if (block > r.through) r.through = block;
        continue;
      }
      if (!r) this.settledRows++;
      rows.set(g.pos, { from: g.from, through: block, value: g.value });
    }
  }

  /** See BatchingStore.headReader: each call one statement on the shared pool, no transaction. */
  headReader(block: bigint): StateReader {
    return this.reader(
      (sql, bindings) => this.db.query('state.head_read', (knex) => rawOn(knex)(sql, bindings)),
      block,
    );
  }

  private reader(raw: RawQuery, block: bigint, settled = false): StateReader {
    const n = block.toString();
    return {
      block,
      nodes: async (tree, positions) => {
        const out = new Map<number, Bytes>();
        const want = settled ? this.fromSettled(tree, positions, block, out) : positions;
        if (want.length === 0) return out;
        // Each row's version block too: at a settled block, what is read stays true from that block on.
        const { rows } = await raw<{ rows: { pos: string; block: string | null; value: Uint8Array | null }[] }>(
          `select p.pos, n.block, n.value from unnest(?::bigint[]) as p(pos)
           left join lateral (
             select block, value from ${this.table('nodes')} where tree = decode(?, 'hex') and pos = p.pos and block <= ? order by block desc limit 1
           ) n on true`,
          [want.map(String), treeHex(tree), n],
        );
        for (const r of rows) if (r.value) out.set(Number(r.pos), r.value);
        if (settled) {
          const got = rows.map((r) => ({
            pos: Number(r.pos),
            from: r.block === null ? -1n : BigInt(r.block),
            value: r.value,
          }));
          this.keepSettled(tree, got, block);
        }
        return out;
      },
      floorKeys: async (tree, hKeys) => {
        const out = new Map<string, KeyEntry | undefined>();
        if (hKeys.length === 0) return out;
        const { rows } = await raw<{ rows: { q: string; hkey: string | null; leaf_index: string | null }[] }>(
          `select q.h as q, k.hkey, k.leaf_index from unnest(?::text[]) as q(h)
           left join lateral (
             select encode(d.hkey, 'hex') as hkey, d.leaf_index from (
               select distinct on (hkey) hkey, leaf_index from ${this.table('keys')}
               where tree = decode(?, 'hex') and hkey <= decode(q.h, 'hex') and block <= ?
               order by hkey desc, block desc
             ) d where d.leaf_index is not null limit 1
           ) k on true`,
          [hKeys.map(bare), treeHex(tree), n],
        );
        for (const r of rows)
          out.set(`0x${r.q}`, r.hkey === null ? undefined : { hKey: `0x${r.hkey}`, leafIndex: Number(r.leaf_index) });
        return out;
      },
      keysUpTo: async (tree, limit) => {
        const { rows } = await raw<{ rows: { hkey: string; leaf_index: string }[] }>(
          `select encode(hkey, 'hex') as hkey, leaf_index from (
             select distinct on (hkey) hkey, leaf_index from ${this.table('keys')} where tree = decode(?, 'hex') and block <= ? order by hkey, block desc
           ) d where d.leaf_index is not null limit ?`,
          [treeHex(tree), n, limit + 1],
        );
        if (rows.length > limit) return undefined;
        return rows.map((r) => ({ hKey: `0x${r.hkey}`, leafIndex: Number(r.leaf_index) }));
      },
      liveRows: async (tree) => {
        const nodes = await raw<{ rows: { pos: string }[] }>(
          `select pos from (select distinct on (pos) pos, value from ${this.table('nodes')} where tree = decode(?, 'hex') and block <= ? order by pos, block desc) d
           where d.value is not null`,
          [treeHex(tree), n],
        );
        const keys = await raw<{ rows: { hkey: string }[] }>(
          `select encode(hkey, 'hex') as hkey from (select distinct on (hkey) hkey, leaf_index from ${this.table('keys')} where tree = decode(?, 'hex') and block <= ? order by hkey, block desc) d
           where d.leaf_index is not null`,
          [treeHex(tree), n],
        );
        return { positions: nodes.rows.map((r) => Number(r.pos)), hKeys: keys.rows.map((r) => `0x${r.hkey}`) };
      },
    };
  }

  commit(block: BlockRecord, writes: Map<TreeId, TreeWrites>): Promise<void> {
    return this.commitBlocks([{ block, writes }]);
  }

  /**
   * Writes several consecutive blocks (ascending) in one transaction: each row keeps its own block, so
   * the tables end up exactly as if the blocks had been committed one at a time.
   */
  async commitBlocks(blocks: readonly StagedBlock[]): Promise<void> {
    if (blocks.length === 0) return;
    const nodes: { t: string[]; p: string[]; b: string[]; v: (string | null)[] } = { t: [], p: [], b: [], v: [] };
    const keys: { t: string[]; h: string[]; b: string[]; i: (string | null)[] } = { t: [], h: [], b: [], i: [] };
    let prev: bigint | undefined;
    for (const { block, writes } of blocks) {
      if (prev !== undefined && block.number <= prev)
        throw new Error(`blocks must ascend: ${block.number} after ${prev}`);
      prev = block.number;
      const n = block.number.toString();
      for (const [tree, w] of writes) {
        const th = treeHex(tree);
        for (const [pos, value] of w.nodes) {
          nodes.t.push(th);
          nodes.p.push(String(pos));
          nodes.b.push(n);
          nodes.v.push(value ? bareHex(value) : null);
        }
        for (const [hKey, idx] of w.keys) {
          keys.t.push(th);
          keys.h.push(bare(hKey));
          keys.b.push(n);
          keys.i.push(idx === null ? null : String(idx));
        }
      }
    }
    const first = blocks[0]!.block.number;
    await this.db.query('state.commit_blocks', (knex) =>
      knex.transaction(async (trx) => {
        const head = await trx.raw<{ rows: { number: string }[] }>(
          `select number from ${this.table('blocks')} order by number desc limit 1`,
        );
        const top = head.rows[0]?.number;
        if (top !== undefined && BigInt(top) >= first)
          throw new Error(`block ${first} is not above the head ${top}; roll back first`);
        // Whole arrays through unnest, CHUNK rows a statement.
        const insert = async (sql: string, columns: (string | null)[][]) => {
          for (let i = 0; i < columns[0]!.length; i += CHUNK)
            await trx.raw(sql, columns.map((c) => c.slice(i, i + CHUNK)) as string[][]);
        };
        await insert(
          `insert into ${this.table('nodes')} (tree, pos, block, value)
           select decode(u.t, 'hex'), u.p, u.b, decode(u.v, 'hex') from unnest(?::text[], ?::bigint[], ?::bigint[], ?::text[]) as u(t, p, b, v)`,
          [nodes.t, nodes.p, nodes.b, nodes.v],
        );
        await insert(
          `insert into ${this.table('keys')} (tree, hkey, block, leaf_index)
           select decode(u.t, 'hex'), decode(u.h, 'hex'), u.b, u.i from unnest(?::text[], ?::text[], ?::bigint[], ?::bigint[]) as u(t, h, b, i)`,
          [keys.t, keys.h, keys.b, keys.i],
        );
        await trx(this.table('blocks')).insert(
          blocks.map(({ block }) => ({
            number: block.number.toString(),
            hash: block.hash,
            parent_hash: block.parentHash,
            root: block.root,
          })),
        );
      }),
    );
  }

  private static record(
    r: { number: string; hash: string; parent_hash: string; root: string } | undefined,
  ): BlockRecord | undefined {
    return r && { number: BigInt(r.number), hash: r.hash, parentHash: r.parent_hash, root: r.root };
  }

  async head(): Promise<BlockRecord | undefined> {
    const r = await this.db.query('state.head', (knex) => knex(this.table('blocks')).orderBy('number', 'desc').first());
    return PgStore.record(r);
  }

  async block(number: bigint): Promise<BlockRecord | undefined> {
    const r = await this.db.query('state.block', (knex) =>
      knex(this.table('blocks')).where({ number: number.toString() }).first(),
    );
    return PgStore.record(r);
  }

  async rollback(block: bigint): Promise<void> {
    // A caller that rolls back a block it called settled broke that promise; forget what was read then.
    this.settled = new Map();
    this.settledRows = 0;
    const n = block.toString();
    await this.db.query('state.rollback', (knex) =>
      knex.transaction(async (trx) => {
        await trx(this.table('nodes')).where('block', '>', n).delete();
        await trx(this.table('keys')).where('block', '>', n).delete();
        await trx(this.table('blocks')).where('number', '>', n).delete();
      }),
    );
  }

  /**
   * Versions at or below the floor that a later version at or below the floor supersedes can no longer be
   * read; neither can a cleared row that is the last version at or below the floor. Only rows written
   * since the previous prune can create such garbage, so each run looks at (previous floor, floor] only.
   */
  async prune(floor: bigint): Promise<number> {
    const prev = BigInt((await this.getMeta('pruned_floor')) ?? '-1');
    if (floor <= prev) return 0;
    const [p, f] = [prev.toString(), floor.toString()];
    return this.db.query('state.prune', (knex) =>
      knex.transaction(async (trx) => {
        let removed = 0;
        for (const [name, key, value] of [
          ['nodes', 'pos', 'value'],
          ['keys', 'hkey', 'leaf_index'],
        ] as const) {
          const a = await trx.raw<{ rowCount: number }>(
            `with c as (select tree, ${key} as k, max(block) as keep from ${this.table(name)} where block > ? and block <= ? group by tree, ${key})
             delete from ${this.table(name)} x using c where x.tree = c.tree and x.${key} = c.k and x.block < c.keep`,
            [p, f],
          );
          const b = await trx.raw<{ rowCount: number }>(
            `delete from ${this.table(name)} where block > ? and block <= ? and ${value} is null`,
            [p, f],
          );
          removed += (a.rowCount ?? 0) + (b.rowCount ?? 0);
        }
        await trx(this.table('blocks')).where('number', '<', f).delete();
        await trx(this.table('meta')).insert({ key: 'pruned_floor', value: f }).onConflict('key').merge();
        return removed;
      }),
    );
  }

  async getMeta(key: string): Promise<string | undefined> {
    const r = await this.db.query('state.get_meta', (knex) => knex(this.table('meta')).where({ key }).first());
    return (r as { value: string } | undefined)?.value;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.db.query('state.set_meta', (knex) =>
      knex(this.table('meta')).insert({ key, value }).onConflict('key').merge(),
    );
  }

  async recordFinalization(rec: FinalizationRecord): Promise<void> {
    await this.db.query('state.record_finalization', (knex) =>
      knex(this.table('finalizations'))
        .insert({
          l2_block: rec.l2Block.toString(),
          state_root: rec.stateRoot,
          l1_block: rec.l1Block.toString(),
          l1_tx_hash: rec.l1TxHash,
        })
        .onConflict('l2_block')
        .merge(),
    );
  }

  async finalization(l2Block: bigint): Promise<FinalizationRecord | undefined> {
    const r = (await this.db.query('state.finalization', (knex) =>
      knex(this.table('finalizations')).where({ l2_block: l2Block.toString() }).first(),
    )) as { l2_block: string; state_root: string; l1_block: string; l1_tx_hash: string } | undefined;
    return (
      r && { l2Block: BigInt(r.l2_block), stateRoot: r.state_root, l1Block: BigInt(r.l1_block), l1TxHash: r.l1_tx_hash }
    );
  }
}
