import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './generate.js';

/** The page whose snippets the client tests run. */
export const CLIENTS_DOC = join(root, 'docs/clients.md');

/**
 * The code blocks of docs/clients.md marked `<!-- snippet: NAME -->` on the line before their fence, by NAME, exactly
 * as the page shows them: what integrators copy is what the tests run.
 */
export function docSnippets(): Map<string, string> {
  const text = readFileSync(CLIENTS_DOC, 'utf8');
  const out = new Map<string, string>();
  for (const m of text.matchAll(/<!-- snippet: ([\w.-]+) -->\n```\w+\n([\s\S]*?)\n```/g)) out.set(m[1]!, `${m[2]!}\n`);
  return out;
}

/**
 * A directory holding every snippet of the page as its own file, with `links` (name → directory) beside them, so
 * `import … from './token-api-client'` resolves to a generated client as it does for an integrator. Kept in the
 * system temp directory keyed on the page and the links (one per change, not one per run), written beside and
 * renamed into place like the generated clients (./generate.ts).
 */
export function writeSnippets(links: Record<string, string> = {}): string {
  const snippets = docSnippets();
  const key = createHash('sha256')
    .update(JSON.stringify([[...snippets], Object.entries(links).sort()]))
    .digest('hex')
    .slice(0, 16);
  const dir = join(tmpdir(), 'l2stack-snippets', key);
  if (existsSync(dir)) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  for (const [name, code] of snippets) writeFileSync(join(tmp, name), code);
  for (const [name, target] of Object.entries(links)) symlinkSync(target, join(tmp, name), 'dir');
  try {
    renameSync(tmp, dir);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another test file wrote the same one first
  }
  return dir;
}
