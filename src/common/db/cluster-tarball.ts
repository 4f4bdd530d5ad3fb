import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmdirSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

/**
 * Unpacks PGlite's saved empty cluster (a gzipped tar from `dumpDataDir`, pglite-template.ts) into a new data
 * directory with Node's own gunzip and file writes. PGlite's `loadDataDir` does the same through its
 * WebAssembly file system: 1.1–1.4 s for the 4.5 MB template here, against ~0.2 s this way, on every first
 * start of a relayer (a new container volume) before it can claim anything.
 *
 * Only what `dumpDataDir` writes is accepted: ustar directories and regular files, names inside the directory.
 * Anything else (a link, a long-name or pax header, a name with `..`, a truncated archive) throws
 * ClusterTarballError before the first byte is written, and the caller falls back to PGlite's own loading.
 */
export class ClusterTarballError extends Error {
  override name = 'ClusterTarballError';
}

interface Entry {
  path: string;
  kind: 'dir' | 'file';
  mode: number;
  data: Buffer;
}

const BLOCK = 512;

const field = (header: Buffer, at: number, length: number) => {
  const raw = header.subarray(at, at + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end < 0 ? length : end).toString('utf8');
};

const octal = (header: Buffer, at: number, length: number, what: string): number => {
  const text = field(header, at, length).trim();
  if (!/^[0-7]*$/.test(text)) throw new ClusterTarballError(`tar header: ${what} "${text}" is not octal`);
  return text === '' ? 0 : parseInt(text, 8);
};

/** The archive's entries, checked whole before anything is written. */
function readEntries(archive: Buffer): Entry[] {
  const entries: Entry[] = [];
  for (let at = 0; at + BLOCK <= archive.length;) {
    const header = archive.subarray(at, at + BLOCK);
    // Two zero blocks end the archive; one is enough to stop reading.
    if (header.every((b) => b === 0)) return entries;
    const type = String.fromCharCode(header[156]!);
    const name = field(header, 0, 100);
    const prefix = field(header, 257, 6).startsWith('ustar') ? field(header, 345, 155) : '';
    const path = (prefix ? `${prefix}/${name}` : name).replace(/^\/+/, '').replace(/\/+$/, '');
    const size = octal(header, 124, 12, 'size');
    const mode = octal(header, 100, 8, 'mode') & 0o777;
    const segments = path.split('/');
    if (path === '' && type === '5') {
      at += BLOCK;
      continue;
    }
    if (path === '' || segments.some((s) => s === '' || s === '.' || s === '..'))
      throw new ClusterTarballError(`tar entry "${path}" is not a plain relative path`);
    if (type !== '0' && type !== '\0' && type !== '5')
      throw new ClusterTarballError(
        `tar entry "${path}" has type "${type}" (only directories and regular files are expected)`,
      );
    const start = at + BLOCK;
    if (start + size > archive.length) throw new ClusterTarballError(`tar entry "${path}" is truncated`);
    entries.push({ path, kind: type === '5' ? 'dir' : 'file', mode, data: archive.subarray(start, start + size) });
    at = start + Math.ceil(size / BLOCK) * BLOCK;
  }
  throw new ClusterTarballError('the archive ends without its end-of-archive block');
}

/**
 * Writes the cluster of `tarball` into `dataDir` (which exists and holds no cluster), leaving out the names in
 * `keep` (this process's lock file). PG_VERSION, which marks a directory as a cluster (pgliteStart), is
 * written last, so a start cut off half-way leaves a directory that the next start fills again; on an error,
 * whatever this call created is removed. Returns how to remove it later (PGlite could not start from it).
 */
export function unpackCluster(tarball: string, dataDir: string, keep: readonly string[]): () => void {
  let archive: Buffer;
  try {
    archive = gunzipSync(readFileSync(tarball));
  } catch (err) {
    throw new ClusterTarballError(`cannot read ${tarball}: ${(err as Error).message}`);
  }
  const entries = readEntries(archive).filter((e) => !keep.includes(e.path));
  const marker = entries.findIndex((e) => e.path === 'PG_VERSION');
  if (marker < 0) throw new ClusterTarballError('the archive holds no PG_VERSION: not a database cluster');
  entries.push(...entries.splice(marker, 1));
  const created: { path: string; dir: boolean }[] = [];
  const remove = () => {
    for (const c of created.reverse()) {
      try {
        if (c.dir) rmdirSync(c.path);
        else rmSync(c.path, { force: true });
      } catch {
        // A directory something else wrote into is left.
      }
    }
  };
  try {
    for (const e of entries) {
      const target = join(dataDir, e.path);
      if (e.kind === 'dir') {
        if (!existsSync(target)) {
          mkdirSync(target, { mode: e.mode || 0o700 });
          created.push({ path: target, dir: true });
        }
        continue;
      }
      // 'wx': an existing file is never overwritten (the directory was to hold no cluster).
      const fd = openSync(target, 'wx', e.mode || 0o600);
      created.push({ path: target, dir: false });
      try {
        for (let off = 0; off < e.data.length;) off += writeSync(fd, e.data, off, e.data.length - off);
      } finally {
        closeSync(fd);
      }
    }
  } catch (err) {
    remove();
    throw new ClusterTarballError(`unpacking the cluster into ${dataDir} failed: ${(err as Error).message}`);
  }
  return remove;
}
