import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { VarSpec } from '../../src/common/config/env.js';
import { declaredVariables, value } from './env-example.js';

/**
 * The variable tables of the docs, written from the same declarations as .env.example so that a default is
 * written once (in src/*\/config.ts). A doc asks for a table with a marker naming its variables:
 *
 *   <!-- generated:env RPC_GAS_CAP RPC_EVM_TIMEOUT_MS -->
 *   (anything here is replaced by `npm run codegen`)
 *   <!-- /generated -->
 */
const BLOCK = /(<!-- generated:env ([A-Z0-9_ ]+) -->\n)[\s\S]*?(<!-- \/generated -->)/g;

/** A default as .env takes it, with a reading aid derived from it for sizes and durations. */
function shown(name: string, spec: VarSpec<unknown>): string {
  if (spec.default === undefined || spec.default === '') return 'unset';
  const raw = value(spec.default);
  const n = Number(raw);
  const aid =
    name.includes('_BYTES') && n >= 1024 && n % 1024 === 0
      ? n % 1_048_576 === 0
        ? `${n / 1_048_576} MiB`
        : `${n / 1024} KiB`
      : name.endsWith('_MS') && n >= 1000 && n % 1000 === 0
        ? `${n / 1000} s`
        : '';
  return `\`${raw}\`${aid ? ` (${aid})` : ''}`;
}

function table(names: string[], vars: Map<string, VarSpec<unknown>>, where: string): string {
  const rows = names.map((name) => {
    const spec = vars.get(name);
    if (!spec) throw new Error(`${where}: generated:env names ${name}, which no service declares (or only tests set)`);
    const cell = (s: string) => s.replace(/\|/g, '\\|');
    return `| \`${name}\` | ${shown(name, spec)} | ${cell(spec.expected)} | ${cell(spec.doc ?? '')} |`;
  });
  return ['| variable | default | accepted | what it does |', '|---|---|---|---|', ...rows, ''].join('\n');
}

/** The text with every generated block rewritten. */
export function withTables(text: string, where: string, vars = declaredVariables()): string {
  return text.replace(
    BLOCK,
    (_, open: string, names: string, close: string) => open + table(names.trim().split(/\s+/), vars, where) + close,
  );
}

/** The docs that may hold generated tables, repository-relative. */
export async function documents(root: string): Promise<string[]> {
  const docs = (await readdir(join(root, 'docs')))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', 'CONTRIBUTING.md', ...docs];
}

/** Each document whose generated blocks differ from what they should be: [path, want]. */
export async function docTables(root: string): Promise<[path: string, want: string, have: string][]> {
  const out: [string, string, string][] = [];
  for (const path of await documents(root)) {
    const have = await readFile(join(root, path), 'utf8');
    const want = withTables(have, path);
    if (want !== have) out.push([path, want, have]);
  }
  return out;
}
