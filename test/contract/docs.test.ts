import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { declaredVariables, value } from '../../scripts/codegen/env-example.js';

/**
 * The documentation is split: README.md (what it is, quick start, tests, layout, contents) and one reference per
 * service under docs/. These checks keep the split honest: no link between the documents points at a file or a
 * heading that does not exist. (.env.example, every variable described, is generated: npm run codegen:check.)
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const docsDir = join(root, 'docs');
const documents = [
  'README.md',
  ...readdirSync(docsDir)
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

/**
 * A variable's default written by hand next to its name, in any of the forms the docs used: `` `VAR` (50 ``,
 * `` `VAR`, 131,072 ``, `` `VAR` (default 30,000 ms ``, `` `VAR` (10 MiB ``, `` `VAR` requests a second (100) ``.
 * Only a number equal to the default counts (after its unit), so a bound or an example value passes.
 */
function handWrittenDefaults(doc: string, text: string): string[] {
  const found: string[] = [];
  const units: Record<string, number> = { KiB: 1024, MiB: 1_048_576, GiB: 1_073_741_824, s: 1000, min: 60_000, ms: 1 };
  // Generated blocks blanked (their lines kept, so line numbers stay right); a name and its default may be on two
  // lines.
  const prose = text.replace(/<!-- generated:env [^>]*-->[\s\S]*?<!-- \/generated -->/g, (block) =>
    block.replace(/[^\n]/g, ' '),
  );
  for (const [name, spec] of declaredVariables()) {
    if (spec.default === undefined) continue;
    const want = value(spec.default);
    if (!/^\d+(\.\d+)?$/.test(want)) continue;
    const re = new RegExp(
      `\`${name}\`[^|\`]{0,30}?(?<!\\d)[(,=;]\\s*(?:default\\s+)?(\\d[\\d,]*(?:\\.\\d+)?)\\s*(KiB|MiB|GiB|min|ms|s)?\\b`,
      'g',
    );
    for (const m of prose.matchAll(re)) {
      const n = Number(m[1]!.replace(/,/g, ''));
      const unit = m[2];
      const scaled =
        unit === undefined
          ? n
          : unit === 's' || unit === 'min' || unit === 'ms'
            ? name.endsWith('_MS')
              ? n * units[unit]!
              : n * (units[unit]! / 1000)
            : n * units[unit]!;
      if (String(n) === want || String(scaled) === want)
        found.push(`${doc}:${prose.slice(0, m.index).split('\n').length}: ${m[0].replace(/\s+/g, ' ')}`);
    }
  }
  return found;
}

/** Pages allowed to write a default by hand: none; the list may only shrink. */
const KNOWN_DEFAULTS_BY_HAND: string[] = [];

/** GitHub's anchor for a heading: lower case, punctuation dropped except '-' and '_', spaces to '-'. */
const anchorOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

const anchorsIn = (text: string): Set<string> => {
  const anchors = new Set<string>();
  let inFence = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) inFence = !inFence;
    const heading = !inFence && /^#{1,6} (.+)$/.exec(line);
    if (heading) anchors.add(anchorOf(heading[1]!));
  }
  return anchors;
};

describe('documentation', () => {
  it('behavior: README.md stays short and links every service reference', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThan(200);
    for (const doc of documents.filter((d) => d.startsWith('docs/'))) expect(readme).toContain(`](${doc})`);
  });

  it('behavior: no default is written by hand: the docs name the variable, the generated tables give its default', () => {
    const pages = [...documents, 'CONTRIBUTING.md'].filter((d) => !KNOWN_DEFAULTS_BY_HAND.includes(d));
    expect(pages.flatMap((doc) => handWrittenDefaults(doc, read(doc)))).toEqual([]);
  });

  it('behavior: every relative link resolves to an existing file and heading', () => {
    const broken: string[] = [];
    for (const doc of documents) {
      for (const [, target] of read(doc).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [file, anchor] = target!.split('#') as [string, string | undefined];
        const path = file === '' ? join(root, doc) : resolve(dirname(join(root, doc)), file);
        if (!existsSync(path)) broken.push(`${doc}: ${target} (no file)`);
        else if (anchor && path.endsWith('.md') && !anchorsIn(readFileSync(path, 'utf8')).has(anchor))
          broken.push(`${doc}: ${target} (no heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
