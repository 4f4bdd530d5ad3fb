import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
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
 * A fresh directory holding every snippet of the page as its own file, with `links` (name → directory) beside them,
 * so `import … from './token-api-client'` resolves to a generated client as it does for an integrator.
 */
export function writeSnippets(links: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'l2stack-snippets-'));
  for (const [name, code] of docSnippets()) writeFileSync(join(dir, name), code);
  for (const [name, target] of Object.entries(links)) symlinkSync(target, join(dir, name), 'dir');
  return dir;
}
