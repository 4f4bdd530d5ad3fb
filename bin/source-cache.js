// The checkout's TypeScript as plain JavaScript, kept next to node_modules so the command starts without a
// loader hook. tsx's hooks run on a thread of their own and answer every import through it: loading the
// relayer that way took ~1.7 s of CPU against ~0.9 s for the same files already in JavaScript. Each
// src/ and generated/ file is transpiled by esbuild (tsx's own transpiler) when its copy is missing or its
// modification time differs, so the copy is never stale; copies of deleted files are removed.
//
// Layout: <cache>/dist/src/… and <cache>/dist/generated/…, with <cache>/package.json and <cache>/specs
// linking to the checkout's, so the code finds its specs and version exactly as from a build's dist/.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

const TRANSPILE = {
  loader: 'ts',
  format: 'esm',
  target: 'node20',
  sourcemap: 'inline',
  sourcesContent: false,
  tsconfigRaw: { compilerOptions: { target: 'ES2022', useDefineForClassFields: true } },
};

/** Every .ts file (not .d.ts) under `dir`, relative to `root`. */
function sources(root, dir) {
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => relative(root, join(e.parentPath ?? e.path, e.name)));
}

function link(target, path) {
  if (!existsSync(path)) {
    try {
      symlinkSync(target, path);
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
  }
}

/**
 * Brings the cache of the checkout at `root` up to date and returns the URL of its CLI entry, or undefined
 * when it cannot (esbuild missing, a read-only checkout): the caller then falls back to tsx.
 */
export async function cachedEntry(root) {
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    return undefined;
  }
  const cache = join(root, 'node_modules', '.cache', 'l2stack');
  const out = join(cache, 'dist');
  try {
    mkdirSync(out, { recursive: true });
    link(join(root, 'package.json'), join(cache, 'package.json'));
    link(join(root, 'specs'), join(cache, 'specs'));
    const files = [...sources(root, 'src'), ...sources(root, 'generated')];
    const wanted = new Set();
    let transpiled = false;
    for (const file of files) {
      const js = join(out, file.replace(/\.ts$/, '.js'));
      wanted.add(js);
      const { mtimeMs, mtime } = statSync(join(root, file));
      // Within a millisecond: a copy's time is set from a Date, which keeps no finer part.
      if (existsSync(js) && Math.abs(statSync(js).mtimeMs - mtimeMs) < 1) continue;
      const path = join(root, file);
      const { code } = await esbuild.transform(readFileSync(path, 'utf8'), { ...TRANSPILE, sourcefile: path });
      transpiled = true;
      mkdirSync(dirname(js), { recursive: true });
      // Written aside and renamed: processes started together (tests) may transpile the same file at once.
      const tmp = `${js}.${process.pid}.tmp`;
      writeFileSync(tmp, code);
      utimesSync(tmp, mtime, mtime);
      renameSync(tmp, js);
    }
    // esbuild's service is a child process that would otherwise live as long as the command (and outlive it
    // by a moment: a cluster primary's children are its workers, nothing else).
    if (transpiled) await esbuild.stop();
    for (const dir of ['src', 'generated']) {
      if (!existsSync(join(out, dir))) continue;
      for (const e of readdirSync(join(out, dir), { recursive: true, withFileTypes: true })) {
        const p = join(e.parentPath ?? e.path, e.name);
        if (e.isFile() && p.endsWith('.js') && !wanted.has(p)) rmSync(p, { force: true });
      }
    }
  } catch {
    return undefined;
  }
  return pathToFileURL(join(out, 'src', 'cli.js'));
}
