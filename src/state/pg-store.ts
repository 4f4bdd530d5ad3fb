import type { Knex } from 'knex';
import type { DbClient } from '../common/db/client.js';
import type { Bytes } from './bytes.js';
import type { BatchingStore, StagedBlock } from './staged-store.js';
import { DEPTH, HEAD_INDEX, MAX_LEAVES, TAIL_INDEX } from './encoding.js';
import type { BlockRecord, FinalizationRecord, KeyEntry, ProofRows, StateReader, TreeId, TreeWrites } from './store.js';
import { ROOT_POS } from './tree.js';

/**
 * VersionedStore on Postgres or PGlite (knex). Reads are index seeks on the primary keys: "latest version
 * ≤ N" of a node is one backward step of (tree, pos, block); the floor key walks (tree, hkey, block)
 * backwards to the first key live at N. Writes go in as whole arrays (unnest), so a block is a handful of
 * statements in one transaction whatever its size.
 */
const treeHex = (tree: TreeId): string => (tree === '' ? '' : tree.slice(2).toLowerCase());
const bare = (hex: string): string => hex.slice(2);
const CHUNK = 20_000;
/** A text[] literal of hex strings (refusing anything else: it is spliced into SQL). */
const hexArray = (items: string[]): string => {
  const bad = items.find((x) => !/^[0-9a-f]*$/.test(x));
  if (bad !== undefined) throw new Error(`not lowercase hex: "${bad.slice(0, 80)}"`);
  return `array[${items.map((x) => `'${x}'`).join(',')}]::text[]`;
};
/** Bare lowercase hex of bytes (Buffer's native encoder: the rows of a block are tens of thousands). */
const hexOf = (b: Bytes): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

export class PgStore implements BatchingStore {
  readonly kind: 'pglite' | 'postgres';
  private readonly t: (name: string) => string;

  constructor(
    private readonly db: DbClient,
    readonly schema: string,
  ) {
    this.kind = db.kind;
    this.t = (name) => `${schema}.${name}`;
  }

  read<T>(block: bigint, fn: (reader: StateReader) => Promise<T>): Promise<T> {
    return this.db.run((knex) =>
      knex.transaction((trx) => fn(this.reader(trx, block)), { isolationLevel: 'repeatable read', readOnly: true } as Knex.TransactionConfig),
    );
  }

  private reader(q: Knex | Knex.Transaction, block: bigint): StateReader {
    const n = block.toString();
    return {
      block,
      nodes: async (tree, positions) => {
        const out = new Map<number, Bytes>();
        if (positions.length === 0) return out;
        const { rows } = await q.raw<{ rows: { pos: string; value: Uint8Array | null }[] }>(
          `select p.pos, n.value from unnest(?::bigint[]) as p(pos)
           cross join lateral (
             select value from ${this.t('nodes')} where tree = decode(?, 'hex') and pos = p.pos and block <= ? order by block desc limit 1
           ) n`,
          [positions.map(String), treeHex(tree), n],
        );
        for (const r of rows) if (r.value) out.set(Number(r.pos), r.value);
        return out;
      },
      floorKeys: async (tree, hKeys) => {
        const out = new Map<string, KeyEntry | undefined>();
        if (hKeys.length === 0) return out;
        const { rows } = await q.raw<{ rows: { q: string; hkey: string | null; leaf_index: string | null }[] }>(
          `select q.h as q, k.hkey, k.leaf_index from unnest(?::text[]) as q(h)
           left join lateral (
             select encode(d.hkey, 'hex') as hkey, d.leaf_index from (
               select distinct on (hkey) hkey, leaf_index from ${this.t('keys')}
               where tree = decode(?, 'hex') and hkey <= decode(q.h, 'hex') and block <= ?
               order by hkey desc, block desc
             ) d where d.leaf_index is not null limit 1
           ) k on true`,
          [hKeys.map(bare), treeHex(tree), n],
        );
        for (const r of rows) out.set(`0x${r.q}`, r.hkey === null ? undefined : { hKey: `0x${r.hkey}`, leafIndex: Number(r.leaf_index) });
        return out;
      },
      keysUpTo: async (tree, limit) => {
        const { rows } = await q.raw<{ rows: { hkey: string; leaf_index: string }[] }>(
          `select encode(hkey, 'hex') as hkey, leaf_index from (
             select distinct on (hkey) hkey, leaf_index from ${this.t('keys')} where tree = decode(?, 'hex') and block <= ? order by hkey, block desc
           ) d where d.leaf_index is not null limit ?`,
          [treeHex(tree), n, limit + 1],
        );
        if (rows.length > limit) return undefined;
        return rows.map((r) => ({ hKey: `0x${r.hkey}`, leafIndex: Number(r.leaf_index) }));
      },
      liveRows: async (tree) => {
        const nodes = await q.raw<{ rows: { pos: string }[] }>(
          `select pos from (select distinct on (pos) pos, value from ${this.t('nodes')} where tree = decode(?, 'hex') and block <= ? order by pos, block desc) d
           where d.value is not null`,
          [treeHex(tree), n],
        );
        const keys = await q.raw<{ rows: { hkey: string }[] }>(
          `select encode(hkey, 'hex') as hkey from (select distinct on (hkey) hkey, leaf_index from ${this.t('keys')} where tree = decode(?, 'hex') and block <= ? order by hkey, block desc) d
           where d.leaf_index is not null`,
          [treeHex(tree), n],
        );
        return { positions: nodes.rows.map((r) => Number(r.pos)), hKeys: keys.rows.map((r) => `0x${r.hkey}`) };
      },
    };
  }

  private readonly preparedNames = new Set<string>();

  /**
   * Runs a statement written with $1… placeholders as a prepared statement: planning the proof statement
   * costs more than running it. Postgres: a named statement, which pg prepares once per pooled session.
   * PGlite (one session for the process): PREPARE once, then EXECUTE with the values as literals (EXECUTE
   * takes no bind parameters), which `literals` renders from values checked to be hex or digits.
   */
  private async prepared<R>(knex: Knex, label: string, types: string, sql: string, values: unknown[], literals: () => string[]): Promise<{ rows: R[] }> {
    const name = `l2s_${this.schema}_${label}`.replace(/[^a-z0-9_]/gi, '_').slice(0, 60);
    const client = knex.client as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): Promise<unknown> };
    const conn = await client.acquireConnection();
    try {
      if (this.kind === 'pglite') {
        const pglite = conn as { query<T>(sql: string): Promise<{ rows: T[] }> };
        if (!this.preparedNames.has(name)) {
          try {
            await pglite.query(`prepare ${name} ${types} as ${sql}`);
          } catch (err) {
            // 42P05: prepared already by another store object over the same session and schema.
            if ((err as { code?: string }).code !== '42P05') throw err;
          }
          this.preparedNames.add(name);
        }
        return await pglite.query<R>(`execute ${name}(${literals().join(', ')})`);
      }
      return await (conn as { query<T>(q: { name: string; text: string; values: unknown[] }): Promise<{ rows: T[] }> }).query<R>({ name, text: sql, values });
    } finally {
      await client.releaseConnection(conn);
    }
  }

  /**
   * Everything the proofs of several keys need, in one statement (so one consistent snapshot without a
   * transaction, and one round trip): per key its floor and ceiling keys, then the rows of the root and
   * of both leaves' paths (positions computed in SQL from the leaf indices, as tree.ts lays them out).
   */
  async proofRows(block: bigint, requests: readonly { tree: TreeId; hKey: string }[]): Promise<ProofRows[]> {
    if (requests.length === 0) return [];
    const trees = requests.map((r) => treeHex(r.tree));
    const hKeys = requests.map((r) => bare(r.hKey));
    const latestKey = (cmp: string, order: string) => `
      select d.hkey, d.leaf_index from (
        select distinct on (k.hkey) k.hkey, k.leaf_index from ${this.t('keys')} k
        where k.tree = q.tree and k.hkey ${cmp} q.hkey and k.block <= $3 order by k.hkey ${order}, k.block desc
      ) d where d.leaf_index is not null limit 1`;
    const { rows } = await this.db.run((knex) =>
      this.prepared<{ kind: string; ord: string | null; fh: string | null; fi: string | null; ch: string | null; ci: string | null; tree: string | null; pos: string | null; value: Uint8Array | null }>(
        knex,
        'proof',
        '(text[], text[], bigint)',
        `with q as (
           select u.ord, decode(u.t, 'hex') as tree, decode(u.h, 'hex') as hkey from unnest($1::text[], $2::text[]) with ordinality as u(t, h, ord)
         ), f as (
           select q.ord, q.tree, q.hkey, fl.hkey as fh, fl.leaf_index as fi, ce.hkey as ch, ce.leaf_index as ci from q
           left join lateral (${latestKey('<=', 'desc')}) fl on true
           left join lateral (${latestKey('>', 'asc')}) ce on true
         ), leaves as (
           select tree, coalesce(fi, ${HEAD_INDEX}) as idx from f
           union select tree, coalesce(ci, ${TAIL_INDEX}) from f where fh is distinct from hkey
         ), want as (
           select distinct l.tree, x.p from leaves l cross join lateral (
             select ${ROOT_POS}::bigint as p union all select l.idx union all select l.idx # 1
             union all select h::bigint * ${MAX_LEAVES} + ((l.idx >> h) # 1) from generate_series(1, ${DEPTH - 1}) as h
           ) x
         )
         select 'k' as kind, f.ord, encode(f.fh, 'hex') as fh, f.fi, encode(f.ch, 'hex') as ch, f.ci, null as tree, null::bigint as pos, null::bytea as value from f
         union all
         select 'n', null, null, null, null, null, encode(w.tree, 'hex'), w.p, v.value from want w
         left join lateral (select value from ${this.t('nodes')} where tree = w.tree and pos = w.p and block <= $3 order by block desc limit 1) v on true`,
        [trees, hKeys, block.toString()],
        () => [hexArray(trees), hexArray(hKeys), block.toString()],
      ),
    );
    const byTree = new Map<string, { rows: Map<number, Bytes>; positions: number[] }>();
    for (const r of rows) {
      if (r.kind !== 'n') continue;
      let t = byTree.get(r.tree!);
      if (!t) byTree.set(r.tree!, (t = { rows: new Map(), positions: [] }));
      t.positions.push(Number(r.pos));
      if (r.value) t.rows.set(Number(r.pos), r.value);
    }
    const out: ProofRows[] = new Array(requests.length);
    for (const r of rows) {
      if (r.kind !== 'k') continue;
      const i = Number(r.ord) - 1;
      const t = byTree.get(treeHex(requests[i]!.tree)) ?? { rows: new Map(), positions: [] };
      out[i] = {
        floor: r.fh === null ? undefined : { hKey: `0x${r.fh}`, leafIndex: Number(r.fi) },
        ceiling: r.ch === null ? undefined : { hKey: `0x${r.ch}`, leafIndex: Number(r.ci) },
        rows: t.rows,
        positions: t.positions,
      };
    }
    return out;
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
      if (prev !== undefined && block.number <= prev) throw new Error(`blocks must ascend: ${block.number} after ${prev}`);
      prev = block.number;
      const n = block.number.toString();
      for (const [tree, w] of writes) {
        const th = treeHex(tree);
        for (const [pos, value] of w.nodes) {
          nodes.t.push(th);
          nodes.p.push(String(pos));
          nodes.b.push(n);
          nodes.v.push(value ? hexOf(value) : null);
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
    await this.db.run((knex) =>
      knex.transaction(async (trx) => {
        const head = await trx.raw<{ rows: { number: string }[] }>(`select number from ${this.t('blocks')} order by number desc limit 1`);
        const top = head.rows[0]?.number;
        if (top !== undefined && BigInt(top) >= first) throw new Error(`block ${first} is not above the head ${top}; roll back first`);
        for (let i = 0; i < nodes.t.length; i += CHUNK) {
          const part = <T>(a: T[]) => a.slice(i, i + CHUNK);
          await trx.raw(
            `insert into ${this.t('nodes')} (tree, pos, block, value)
             select decode(u.t, 'hex'), u.p, u.b, decode(u.v, 'hex') from unnest(?::text[], ?::bigint[], ?::bigint[], ?::text[]) as u(t, p, b, v)`,
            [part(nodes.t), part(nodes.p), part(nodes.b), part(nodes.v) as string[]],
          );
        }
        for (let i = 0; i < keys.t.length; i += CHUNK) {
          const part = <T>(a: T[]) => a.slice(i, i + CHUNK);
          await trx.raw(
            `insert into ${this.t('keys')} (tree, hkey, block, leaf_index)
             select decode(u.t, 'hex'), decode(u.h, 'hex'), u.b, u.i from unnest(?::text[], ?::text[], ?::bigint[], ?::bigint[]) as u(t, h, b, i)`,
            [part(keys.t), part(keys.h), part(keys.b), part(keys.i) as string[]],
          );
        }
        await trx(this.t('blocks')).insert(blocks.map(({ block }) => ({ number: block.number.toString(), hash: block.hash, parent_hash: block.parentHash, root: block.root })));
      }),
    );
  }

  private static record(r: { number: string; hash: string; parent_hash: string; root: string } | undefined): BlockRecord | undefined {
    return r && { number: BigInt(r.number), hash: r.hash, parentHash: r.parent_hash, root: r.root };
  }

  async head(): Promise<BlockRecord | undefined> {
    const r = await this.db.run((knex) => knex(this.t('blocks')).orderBy('number', 'desc').first());
    return PgStore.record(r);
  }

  async block(number: bigint): Promise<BlockRecord | undefined> {
    const r = await this.db.run((knex) => knex(this.t('blocks')).where({ number: number.toString() }).first());
    return PgStore.record(r);
  }

  async rollback(block: bigint): Promise<void> {
    const n = block.toString();
    await this.db.run((knex) =>
      knex.transaction(async (trx) => {
        await trx(this.t('nodes')).where('block', '>', n).delete();
        await trx(this.t('keys')).where('block', '>', n).delete();
        await trx(this.t('blocks')).where('number', '>', n).delete();
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
    return this.db.run((knex) =>
      knex.transaction(async (trx) => {
        let removed = 0;
        for (const [table, key, value] of [['nodes', 'pos', 'value'], ['keys', 'hkey', 'leaf_index']] as const) {
          const a = await trx.raw<{ rowCount: number }>(
            `with c as (select tree, ${key} as k, max(block) as keep from ${this.t(table)} where block > ? and block <= ? group by tree, ${key})
             delete from ${this.t(table)} x using c where x.tree = c.tree and x.${key} = c.k and x.block < c.keep`,
            [p, f],
          );
          const b = await trx.raw<{ rowCount: number }>(`delete from ${this.t(table)} where block > ? and block <= ? and ${value} is null`, [p, f]);
          removed += (a.rowCount ?? 0) + (b.rowCount ?? 0);
        }
        await trx(this.t('blocks')).where('number', '<', f).delete();
        await trx(this.t('meta')).insert({ key: 'pruned_floor', value: f }).onConflict('key').merge();
        return removed;
      }),
    );
  }

  async getMeta(key: string): Promise<string | undefined> {
    const r = await this.db.run((knex) => knex(this.t('meta')).where({ key }).first());
    return (r as { value: string } | undefined)?.value;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.db.run((knex) => knex(this.t('meta')).insert({ key, value }).onConflict('key').merge());
  }

  async recordFinalization(rec: FinalizationRecord): Promise<void> {
    await this.db.run((knex) =>
      knex(this.t('finalizations'))
        .insert({ l2_block: rec.l2Block.toString(), state_root: rec.stateRoot, l1_block: rec.l1Block.toString(), l1_tx_hash: rec.l1TxHash })
        .onConflict('l2_block')
        .merge(),
    );
  }

  async finalization(l2Block: bigint): Promise<FinalizationRecord | undefined> {
    const r = (await this.db.run((knex) => knex(this.t('finalizations')).where({ l2_block: l2Block.toString() }).first())) as
      | { l2_block: string; state_root: string; l1_block: string; l1_tx_hash: string }
      | undefined;
    return r && { l2Block: BigInt(r.l2_block), stateRoot: r.state_root, l1Block: BigInt(r.l1_block), l1TxHash: r.l1_tx_hash };
  }

  async close(): Promise<void> {}
}
