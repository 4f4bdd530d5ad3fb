import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * Where l2stack keeps what it derives once and reuses at every start (the saved empty PGlite cluster, parsed
 * specs): node_modules/.cache/l2stack of the installation, found through a package we depend on, so it is
 * the same directory from a checkout, its transpiled copy and a build's dist/. Undefined when that package
 * does not resolve from a node_modules directory. Callers treat the directory as optional: it may be
 * missing or read-only (a container's /app), and then they do the work every time.
 */
export function l2stackCacheDir(): string | undefined {
  try {
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const marker = '/node_modules/@electric-sql/pglite/';
    const at = entry.lastIndexOf(marker);
    if (at < 0) return undefined;
    return join(entry.slice(0, at + '/node_modules'.length), '.cache', 'l2stack');
  } catch {
    return undefined;
  }
}
