import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { ClusterTarballError, unpackCluster } from '../../src/common/db/cluster-tarball.js';

/**
 * A ustar archive of `entries` (type '0' file, '5' directory, '2' symlink), gzipped: what dumpDataDir writes, or a
 * hostile variant.
 */
function tarball(
  entries: { name: string; type?: '0' | '5' | '2'; data?: string; prefix?: string }[],
  { end = true } = {},
): string {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const header = Buffer.alloc(512);
    const data = Buffer.from(e.data ?? '');
    header.write(e.name, 0, 100, 'utf8');
    header.write(e.type === '5' ? '0000750' : '0000600', 100, 8, 'utf8');
    header.write(data.length.toString(8).padStart(11, '0'), 124, 12, 'utf8');
    header.write(e.type ?? '0', 156, 1, 'utf8');
    header.write('ustar', 257, 6, 'utf8');
    if (e.prefix) header.write(e.prefix, 345, 155, 'utf8');
    blocks.push(header, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  if (end) blocks.push(Buffer.alloc(1024));
  const file = join(mkdtempSync(join(tmpdir(), 'l2s-tar-')), 'cluster.tar.gz');
  writeFileSync(file, gzipSync(Buffer.concat(blocks)));
  return file;
}

const emptyDir = () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'l2s-unpack-')), 'data');
  mkdirSync(dir);
  writeFileSync(join(dir, 'l2stack.lock'), 'ours');
  return dir;
};

const cluster = [
  { name: '/base', type: '5' as const },
  { name: '/PG_VERSION', data: '17\n' },
  { name: '/base/1', type: '5' as const },
  { name: '/base/1/1259', data: 'x'.repeat(1_000) },
  { name: '/l2stack.lock', data: 'theirs' },
];

describe('unpacking the saved empty cluster into a new data directory', () => {
  it('behavior: directories and files land inside the directory with their contents; the kept lock file is not replaced', () => {
    const dir = emptyDir();
    unpackCluster(tarball(cluster), dir, ['l2stack.lock']);
    expect(readFileSync(join(dir, 'PG_VERSION'), 'utf8')).toBe('17\n');
    expect(readFileSync(join(dir, 'base/1/1259'), 'utf8')).toBe('x'.repeat(1_000));
    expect(readFileSync(join(dir, 'l2stack.lock'), 'utf8')).toBe('ours');
  });

  it('behavior: a ustar prefix is part of the name', () => {
    const dir = emptyDir();
    unpackCluster(
      tarball([
        { name: 'base', type: '5' },
        { name: '1259', prefix: 'base', data: 'y' },
        { name: 'PG_VERSION', data: '17' },
      ]),
      dir,
      [],
    );
    expect(readFileSync(join(dir, 'base/1259'), 'utf8')).toBe('y');
  });

  it.each([
    [
      'a name climbing out of the directory',
      [{ name: '/../escaped', data: 'no' }, ...cluster],
      'is not a plain relative path',
    ],
    [
      'a symbolic link',
      [{ name: '/base', type: '5' as const }, { name: '/base/link', type: '2' as const }, ...cluster.slice(1)],
      'has type "2"',
    ],
    [
      'a file cut short',
      [
        { name: '/PG_VERSION', data: '17' },
        { name: '/big', data: 'z'.repeat(2_000) },
      ],
      'truncated',
    ],
    ['no cluster in it', [{ name: '/base', type: '5' as const }], 'no PG_VERSION'],
  ])('error: %s is refused before anything is written', (_what, entries, message) => {
    const dir = emptyDir();
    let file = tarball(entries);
    if (message === 'truncated') {
      // Cut the archive inside the second file's data.
      const whole = readFileSync(file);
      file = join(mkdtempSync(join(tmpdir(), 'l2s-tar-')), 'cut.tar.gz');
      writeFileSync(file, gzipSync(gunzipSync(whole).subarray(0, 512 * 3 + 100)));
    }
    expect(() => unpackCluster(file, dir, ['l2stack.lock'])).toThrow(message);
    expect(readdirSync(dir)).toEqual(['l2stack.lock']);
    expect(existsSync(join(dir, '..', 'escaped'))).toBe(false);
  });

  it('error: a file already in the way stops the unpacking and removes what it had written; the directory holds no cluster', () => {
    const dir = emptyDir();
    mkdirSync(join(dir, 'base'));
    mkdirSync(join(dir, 'base', '1'));
    writeFileSync(join(dir, 'base', '1', '1259'), 'someone else');
    const err = (() => {
      try {
        unpackCluster(tarball(cluster), dir, ['l2stack.lock']);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ClusterTarballError);
    expect((err as Error).message).toMatch(/unpacking the cluster into .* failed: EEXIST/);
    expect(readFileSync(join(dir, 'base', '1', '1259'), 'utf8')).toBe('someone else');
    expect(existsSync(join(dir, 'PG_VERSION'))).toBe(false);
  });

  it('error: what is not gzip is refused, naming the file', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'l2s-tar-')), 'plain.tar.gz');
    writeFileSync(file, 'not gzip');
    expect(() => unpackCluster(file, emptyDir(), [])).toThrow(`cannot read ${file}`);
  });
});
