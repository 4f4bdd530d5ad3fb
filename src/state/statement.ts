import type { DbClient, Knex } from '../common/db/client.js';

/** A statement run on every request: written with $1… placeholders, `types` its parameter types in order. */
export interface Statement {
  name: string;
  types: readonly string[];
  text: string;
  /** Values: bare lowercase hex strings for text, decimal integers as strings for bigint. */
  values: readonly string[];
}

const BYTEA_OID = 17;
/**
 * bytea in PGlite's text results ("\\x" + hex) through Buffer's native hex decoder: PGlite's own parser
 * builds the array a byte at a time with parseInt, and a proof's rows are ~5–10 KB of it. A plain
 * Uint8Array view, as PGlite's parser gives.
 */
const byteaParser = {
  parsers: {
    [BYTEA_OID]: (text: string) => {
      const b = Buffer.from(text.slice(2), 'hex');
      return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    },
  },
};

/** PGlite instances (one session each) and the statements already prepared on them. */
const preparedOn = new WeakMap<object, Set<string>>();

/**
 * An EXECUTE argument as a literal: EXECUTE takes no bind parameters, so the values are spliced into its
 * text, which only digits and hex strings may be (anything else is refused rather than quoted).
 */
function literal(value: string, type: string): string {
  if (type === 'bigint') {
    if (!/^-?\d{1,19}$/.test(value)) throw new Error(`statement: not a decimal integer: "${value.slice(0, 40)}"`);
    return `${value}::bigint`;
  }
  if (type !== 'text' || !/^[0-9a-f]*$/.test(value))
    throw new Error(`statement: only hex text and bigint literals, got ${type} "${value.slice(0, 80)}"`);
  return `'${value}'::text`;
}

/**
 * Runs one statement straight on the driver, past knex's query building (knex re-renders SQL and
 * bindings on every call), prepared once per database session so it is parsed and planned once:
 * PostgreSQL: a named extended-protocol statement (pg keeps the names per pooled session);
 * PGlite (one session per process): PREPARE once, then EXECUTE with the values as literals.
 */
export async function runStatement<R>(db: DbClient, statement: Statement): Promise<R[]> {
  return db.query('state.prepared_statement', async (knex: Knex) => {
    const client = knex.client as {
      acquireConnection(): Promise<unknown>;
      releaseConnection(conn: unknown): Promise<unknown>;
    };
    const conn = await client.acquireConnection();
    try {
      if (db.kind === 'pglite') {
        const pglite = conn as {
          query(sql: string): Promise<unknown>;
          exec<T>(sql: string, options?: typeof byteaParser): Promise<{ rows: T[] }[]>;
        };
        let names = preparedOn.get(pglite);
        if (!names) preparedOn.set(pglite, (names = new Set()));
        const prepare = async () => {
          await pglite.query(`prepare ${statement.name} (${statement.types.join(', ')}) as ${statement.text}`);
          names.add(statement.name);
        };
        if (!names.has(statement.name)) await prepare();
        const execute = `execute ${statement.name}(${statement.values.map((v, i) => literal(v, statement.types[i]!)).join(', ')})`;
        // exec: the simple protocol, two calls into PGlite where query's extended protocol makes six.
        const run = async () => (await pglite.exec<R>(execute, byteaParser))[0]?.rows ?? [];
        try {
          return await run();
        } catch (err) {
          // 26000: the session no longer has it (DEALLOCATE ALL, DISCARD ALL): prepare it again, once.
          if ((err as { code?: string }).code !== '26000') throw err;
          names.delete(statement.name);
          await prepare();
          return await run();
        }
      }
      const pg = conn as { query<T>(q: { name: string; text: string; values: unknown[] }): Promise<{ rows: T[] }> };
      return (await pg.query<R>({ name: statement.name, text: statement.text, values: statement.values as unknown[] }))
        .rows;
    } finally {
      await client.releaseConnection(conn);
    }
  });
}
