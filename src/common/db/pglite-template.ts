import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { PGLITE_MEMORY } from './config.js';
import { LOCK_FILE } from './pglite-lock.js';
import { l2stackCacheDir } from '../cache-dir.js';
import { ClusterTarballError, unpackCluster } from './cluster-tarball.js';

/**
 * A new embedded database starts from a copy of an empty one. PGlite's initdb (WebAssembly) took 5.5 s of CPU, against
 * 1.2 s for loading the same empty cluster from a tarball: most of a relayer's first start, and of every in-memory
 * database (`l2stack dev`, tests). The first new database of a PGlite version is made by initdb and saved, before
 * anything is written to it, as node_modules/.cache/l2stack/pglite-<version>.tar.gz; every later one loads that file: a
 * database on disk has it unpacked by cluster-tarball.ts (~0.2 s, where PGlite's own loading takes 1.1–1.4 s), one in
 * memory gets it through PGlite's `loadDataDir`. Where node_modules is not writable nothing is saved and every new
 * database runs initdb, as before; the container image saves it at build time (docker/Dockerfile runs `migrate` on an
 * in-memory database before it drops root).
 */
export interface PgliteStart {
  /** The empty cluster to load instead of running initdb. */
  loadDataDir?: Blob;
  /**
   * Call once PGlite is up from the template: the tarball holds the directory whole, so its extraction replaced this
   * process's lock file (lockPgliteDir) with the one of the process that saved it; ours is written back.
   */
  relock?: () => void;
  /** Where to save this new database's empty cluster once it is up (no template yet). */
  saveTo?: string;
  /**
   * The template was unpacked into the directory (cluster-tarball.ts): removes it again if PGlite cannot start from it.
   */
  unpacked?: () => void;
}

function templateFile(): string | undefined {
  const dir = l2stackCacheDir();
  if (!dir) return undefined;
  try {
    // The cache is node_modules/.cache/l2stack, so the package's own package.json is two levels up from it.
    const { version } = JSON.parse(
      readFileSync(join(dir, '..', '..', '@electric-sql', 'pglite', 'package.json'), 'utf8'),
    ) as { version: string };
    return join(dir, `pglite-${version}.tar.gz`);
  } catch {
    return undefined;
  }
}

/** How to start PGlite on `dataDir`: from the template when the database is new and one exists. */
export function pgliteStart(dataDir: string): PgliteStart {
  if (dataDir !== PGLITE_MEMORY && existsSync(join(dataDir, 'PG_VERSION'))) return {};
  const file = templateFile();
  if (!file) return {};
  if (!existsSync(file)) return { saveTo: file };
  if (dataDir !== PGLITE_MEMORY) {
    // On disk: unpacked here, then opened like any existing database (no loadDataDir).
    try {
      return { unpacked: unpackCluster(file, dataDir, [LOCK_FILE]) };
    } catch (err) {
      if (!(err instanceof ClusterTarballError)) throw err;
      // Not an archive this reader takes: PGlite's own loading below.
    }
  }
  try {
    const lock = join(dataDir, LOCK_FILE);
    const ours = dataDir === PGLITE_MEMORY ? undefined : readFileSync(lock);
    return { loadDataDir: new Blob([readFileSync(file)]), relock: () => ours && writeFileSync(lock, ours) };
  } catch {
    return {};
  }
}

/** Saves the empty cluster of a just-created database as the template; any failure only means no template. */
export async function saveTemplate(pglite: PGlite, file: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    const dump = await pglite.dumpDataDir('gzip');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(tmp, Buffer.from(await dump.arrayBuffer()));
    // Renamed into place: processes creating databases at once (tests) never read a half-written file.
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true });
  }
}

/** A template PGlite could not start from is removed, so the next new database runs initdb (and saves a new one). */
export function dropTemplate(): void {
  const file = templateFile();
  if (file) rmSync(file, { force: true });
}
