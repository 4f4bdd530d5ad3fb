import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { MESSAGE_STATUSES } from '../../src/relayer/message/status.js';
import { root, sourcePaths } from './source.js';

/**
 * The relayer's message statuses are spelled in src/relayer/message/ alone: the statuses, the groups the code
 * asks about (read from the transition table) and the one writer live there, and every other file names a
 * status as `Status.X` or asks a group. A string literal equal to a status anywhere else in src/ (a value, a
 * literal type, a template without substitutions) fails here; comments and longer strings do not count.
 */
const MODULE = 'src/relayer/message/';
const STATUSES = new Set<string>(MESSAGE_STATUSES);

/** Each string literal of `text` that is exactly a status, as 'path:line STATUS'. */
function statusLiterals(path: string, text: string): string[] {
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && STATUSES.has(node.text)) {
      found.push(`${path}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1} ${node.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe('architecture: message statuses', () => {
  it('behavior: no file of src/ outside src/relayer/message/ spells a message status', () => {
    const outside = sourcePaths().filter((p) => !p.startsWith(MODULE));
    expect(outside.length).toBeGreaterThan(100);
    expect(outside.flatMap((p) => statusLiterals(p, readFileSync(join(root, p), 'utf8')))).toEqual([]);
  });

  it('behavior: the module itself spells them (the scan finds what it looks for)', () => {
    const inside = sourcePaths().filter((p) => p.startsWith(MODULE));
    const spelled = new Set(
      inside.flatMap((p) => statusLiterals(p, readFileSync(join(root, p), 'utf8'))).map((l) => l.split(' ')[1]),
    );
    expect([...spelled].sort()).toEqual([...STATUSES].sort());
  });

  it('error: a literal in a value, a literal type or a plain template is found; a comment or a longer string is not', () => {
    const text = [
      "const a = m.status === 'PENDING';",
      'type B = { to: "SENT" };',
      'const c = `ABANDONED`;',
      "// ANCHORED, 'ZERO_FEE' in a comment",
      "const d = 'NEEDS_MANUAL_INTERVENTION is a status';",
    ].join('\n');
    expect(statusLiterals('x.ts', text)).toEqual(['x.ts:1 PENDING', 'x.ts:2 SENT', 'x.ts:3 ABANDONED']);
  });
});
