import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The documentation is split: README.md (what it is, quick start, tests, layout, contents) and one reference per
 * service under docs/. These checks keep the split honest: no link between the documents points at a file or a
 * heading that does not exist. (.env.example, every variable described, is generated: npm run codegen:check.)
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const docsDir = join(root, 'docs');
const documents = ['README.md', ...readdirSync(docsDir).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

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
