import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDbClient } from '../../src/common/db/client.js';
import { LOCK_FILE } from '../../src/common/db/pglite-lock.js';
import { PGLITE_MEMORY } from '../../src/common/db/config.js';
import { pgliteStart } from '../../src/common/db/pglite-template.js';

const freshDir = () => join(mkdtempSync(join(tmpdir(), 'l2s-template-')), 'pglite');
const tables = async (db: Awaited<ReturnType<typeof createDbClient>>) =>
  (
    (await db.knex.raw("select table_name from information_schema.tables where table_schema = 'public'")) as {
      rows: { table_name: string }[];
    }
  ).rows.map((r) => r.table_name);

describe('a new embedded database from the saved empty cluster', () => {
  it("behavior: once a template exists a new directory starts from it, empty, under this process's lock (the one in the tarball is not kept)", async () => {
    // The first new database saves the template when there is none yet (it is an empty cluster either way).
    const first = await createDbClient({ kind: 'pglite', dataDir: freshDir() });
    await first.knex.raw('create table written_after (v text)');
    await first.close();
    const dir = freshDir();
    mkdirSync(dir);
    const start = pgliteStart(dir);
    if (!start.unpacked) {
      // node_modules not writable here: nothing is saved and every new database runs initdb, as before.
      expect(start.saveTo === undefined || !existsSync(start.saveTo)).toBe(true);
      return;
    }
    // On disk the template is unpacked by cluster-tarball.ts, not loaded through PGlite: a cluster is there already.
    expect(start.loadDataDir).toBeUndefined();
    expect(existsSync(join(dir, 'PG_VERSION'))).toBe(true);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    const db = await createDbClient({ kind: 'pglite', dataDir: dir });
    try {
      expect(await tables(db)).toEqual([]);
      expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
      await expect(createDbClient({ kind: 'pglite', dataDir: dir })).rejects.toThrow(
        `is in use by process ${process.pid}`,
      );
    } finally {
      await db.close();
    }
    const reopened = await createDbClient({ kind: 'pglite', dataDir: dir });
    expect(await tables(reopened)).toEqual([]);
    await reopened.close();
  });

  it('behavior: a database in memory still gets the template through PGlite (nothing to unpack into)', async () => {
    await (await createDbClient({ kind: 'pglite', dataDir: freshDir() })).close();
    const start = pgliteStart(PGLITE_MEMORY);
    if (start.saveTo) return; // node_modules not writable: no template
    expect(start.loadDataDir).toBeInstanceOf(Blob);
    expect(start.unpacked).toBeUndefined();
    const db = await createDbClient({ kind: 'pglite', dataDir: undefined });
    expect(await tables(db)).toEqual([]);
    await db.close();
  });
});

describe('PGlite settings', () => {
  it("behavior: shared_buffers is DATABASE_PGLITE_SHARED_BUFFERS_MB (default 16 MB, not PostgreSQL's 128 MB)", async () => {
    const setting = async (db: Awaited<ReturnType<typeof createDbClient>>) =>
      ((await db.knex.raw("select current_setting('shared_buffers') as v")) as { rows: { v: string }[] }).rows[0]!.v;
    const byDefault = await createDbClient({ kind: 'pglite', dataDir: undefined });
    const chosen = await createDbClient({ kind: 'pglite', dataDir: undefined, sharedBuffersMb: 48 });
    try {
      expect(await setting(byDefault)).toBe('16MB');
      expect(await setting(chosen)).toBe('48MB');
    } finally {
      await Promise.all([byDefault.close(), chosen.close()]);
    }
  });
});
