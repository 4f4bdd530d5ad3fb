import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { l2stackCacheDir } from '../cache-dir.js';

/** The YAML parser, loaded only when a document is not in the cache (loading it alone took ~0.1 s). */
const parse = (text: string): unknown => (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);

/**
 * A YAML document parsed once per content: the `yaml` package took ~0.3 s for a 42 KB spec at every start of the
 * relayer, against ~1 ms for JSON.parse of the same document. The parsed form is kept as <cache>/<name>-<sha256 of the
 * text>.json, so an edited spec is parsed again and never served stale; where the cache cannot be written (a
 * container's read-only /app: the image writes it at build time) the text is parsed every time, as before.
 */
export function parseYamlCached(name: string, text: string): unknown {
  const dir = l2stackCacheDir();
  if (!dir) return parse(text);
  const file = join(dir, `${name}-${createHash('sha256').update(text).digest('hex').slice(0, 32)}.json`);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    // missing (or unreadable): parse and try to keep it
  }
  const value: unknown = parse(text);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(tmp, JSON.stringify(value));
    // Renamed into place: processes starting at once never read a half-written file.
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true });
  }
  return value;
}
