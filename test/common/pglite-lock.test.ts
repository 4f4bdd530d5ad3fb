import { describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseLockedError, LOCK_FILE, lockPgliteDir } from '../../src/common/db/pglite-lock.js';
import { createDbClient } from '../../src/common/db/client.js';
import { PGLITE_MEMORY, defaultPgliteDir, describeDatabase, loadDatabaseConfig } from '../../src/common/db/config.js';

const freshDir = () => join(mkdtempSync(join(tmpdir(), 'l2s-lock-')), 'pglite');

describe('PGlite directory lock', () => {
  it('behavior: the lock holds this pid, a second opener is refused naming the directory and the holder, release frees it', () => {
    const dir = freshDir();
    const release = lockPgliteDir(dir);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
    expect(() => lockPgliteDir(dir)).toThrow(DatabaseLockedError);
    expect(() => lockPgliteDir(dir)).toThrow(
      `the embedded database directory ${dir} is in use by process ${process.pid}`,
    );
    release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    lockPgliteDir(dir)();
  });

  it('behavior: a lock left by a dead process is taken over', () => {
    const dir = freshDir();
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    lockPgliteDir(dir)();
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: dead, started: null }));
    const release = lockPgliteDir(dir);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
    release();
  });

  it('behavior: a lock naming our own pid that this process does not hold (a previous pid 1 in a container) is taken over', () => {
    const dir = freshDir();
    lockPgliteDir(dir)();
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: process.pid, started: 1 }));
    lockPgliteDir(dir)();
  });

  it('error: a lock held by another live process is refused; a pid reused by an unrelated process (other start time) is not', async () => {
    const dir = freshDir();
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
    try {
      const started = Number(readFileSync(`/proc/${other.pid}/stat`, 'latin1').split(') ')[1]!.split(' ')[19]);
      lockPgliteDir(dir)();
      writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: other.pid, started }));
      expect(() => lockPgliteDir(dir)).toThrow(`in use by process ${other.pid}`);
      writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: other.pid, started: started - 1 }));
      lockPgliteDir(dir)();
    } finally {
      other.kill('SIGKILL');
    }
  });
});

describe('embedded database location', () => {
  it('behavior: DATABASE_PGLITE_DIR unset leaves the choice to the command; memory:// is memory; a path is made absolute', () => {
    expect(loadDatabaseConfig({})).toEqual({ kind: 'pglite', dataDir: undefined, sharedBuffersMb: 16 });
    expect(loadDatabaseConfig({ DATABASE_PGLITE_DIR: 'memory://' })).toEqual({
      kind: 'pglite',
      dataDir: PGLITE_MEMORY,
      sharedBuffersMb: 16,
    });
    expect(loadDatabaseConfig({ DATABASE_PGLITE_DIR: 'x/y' })).toEqual({
      kind: 'pglite',
      dataDir: join(process.cwd(), 'x/y'),
      sharedBuffersMb: 16,
    });
    expect(defaultPgliteDir('relayer')).toBe(join(process.cwd(), '.l2stack', 'pglite', 'relayer'));
    expect(describeDatabase({ kind: 'pglite', dataDir: undefined })).toBe('embedded PGlite in memory');
    expect(describeDatabase({ kind: 'pglite', dataDir: undefined }, '/d')).toBe('embedded PGlite in /d');
  });

  // On-disk PGlite whatever database the suite uses: the Postgres pass of CI would run the same thing again.
  it.skipIf(Boolean(process.env.DATABASE_HOST))(
    'behavior: a PGlite directory keeps data across close and reopen, is locked while open, and unlocked on close',
    async () => {
      const dir = freshDir();
      const config = loadDatabaseConfig({ DATABASE_PGLITE_DIR: dir });
      const first = await createDbClient(config);
      expect(first.description).toBe(`embedded PGlite in ${dir}`);
      await first.knex.raw('create table kept (v text)');
      await first.knex('kept').insert({ v: 'survives' });
      await expect(createDbClient(config)).rejects.toThrow(
        `the embedded database directory ${dir} is in use by process ${process.pid}`,
      );
      await first.close();
      expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
      const second = await createDbClient(config);
      try {
        expect(await second.knex('kept').select('v')).toEqual([{ v: 'survives' }]);
      } finally {
        await second.close();
      }
    },
  );
});
