import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { METHODS } from '../../src/rpc/methods/index.js';

/**
 * The method set as a test: the spec serves execution-apis' methods (the vendored release's list) less the
 * omissions, plus the additions, both listed with reasons in ONE place (method-set.json), whose omissions
 * docs/rpc.md shows in a table that must say the same. A newer execution-apis list with a new method fails
 * here until the method is served or omitted on purpose.
 */
interface MethodSet {
  omitted: Record<string, string>;
  added: Record<string, string>;
}

const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
const listed = (): string[] => read('./execution-apis/methods.txt').split('\n').filter(Boolean);
const methodSet = (): MethodSet => JSON.parse(read('./method-set.json')) as MethodSet;
const specMethods = (): string[] =>
  (JSON.parse(read('../../specs/rpc.openrpc.json')) as { methods: { name: string }[] }).methods.map((m) => m.name);

/** Whether an omission entry covers a method: the exact name, or a prefix ending in *. */
const covers = (entry: string, method: string) =>
  entry.endsWith('*') ? method.startsWith(entry.slice(0, -1)) : entry === method;

/** Every way the served set differs from execution-apis − omitted + added; empty when they agree. */
export function methodSetProblems(
  executionApis: readonly string[],
  served: readonly string[],
  set: MethodSet,
): string[] {
  const problems: string[] = [];
  const official = new Set(executionApis);
  const ours = new Set(served);
  const omittedBy = (m: string) => Object.keys(set.omitted).find((e) => covers(e, m));
  for (const m of executionApis) {
    const omission = omittedBy(m);
    if (!ours.has(m) && omission === undefined)
      problems.push(
        `${m}: in execution-apis, neither served nor omitted (serve it, or add it to method-set.json "omitted" with a reason)`,
      );
    if (ours.has(m) && omission !== undefined) problems.push(`${m}: served, yet omitted by "${omission}"`);
  }
  for (const entry of Object.keys(set.omitted)) {
    if (!executionApis.some((m) => covers(entry, m)))
      problems.push(`${entry}: omitted, but execution-apis has no such method (stale omission)`);
  }
  for (const m of served) {
    if (!official.has(m) && !(m in set.added))
      problems.push(`${m}: served, not in execution-apis, and not listed in method-set.json "added"`);
  }
  for (const m of Object.keys(set.added)) {
    if (!ours.has(m)) problems.push(`${m}: listed as added, but not served`);
    if (official.has(m)) problems.push(`${m}: listed as added, but execution-apis has it`);
  }
  return problems;
}

/** The omission table of docs/rpc.md (between its markers) as {entry: reason}. */
function documentedOmissions(): Record<string, string> {
  const doc = read('../../docs/rpc.md');
  const table = /<!-- method-omissions:start -->([\s\S]*?)<!-- method-omissions:end -->/.exec(doc)?.[1] ?? '';
  const rows = [...table.matchAll(/^\| `([^`]+)` \| (.+) \|$/gm)];
  return Object.fromEntries(rows.map((r) => [r[1]!, r[2]!.trim()]));
}

describe('the method set', () => {
  it('behavior: the spec serves execution-apis less the omissions, plus the additions, and nothing else', () => {
    expect(methodSetProblems(listed(), specMethods(), methodSet())).toEqual([]);
    // The dispatcher serves exactly the spec's methods.
    expect(METHODS.map((m) => m.name).sort()).toEqual(specMethods().sort());
  });

  it('error: a newer execution-apis list with a method neither served nor omitted fails', () => {
    const newer = [...listed(), 'eth_getBlockWitnessV9'];
    expect(methodSetProblems(newer, specMethods(), methodSet())).toEqual([
      'eth_getBlockWitnessV9: in execution-apis, neither served nor omitted (serve it, or add it to method-set.json "omitted" with a reason)',
    ]);
    // Omitted on purpose, it passes; a new engine_ method is covered by the engine_* omission.
    const set = methodSet();
    expect(
      methodSetProblems(newer, specMethods(), { ...set, omitted: { ...set.omitted, eth_getBlockWitnessV9: 'why' } }),
    ).toEqual([]);
    expect(methodSetProblems([...listed(), 'engine_newPayloadV9'], specMethods(), set)).toEqual([]);
  });

  it('error: stale entries fail: an omission of a served method, an omission execution-apis no longer has, an addition not served', () => {
    const set = methodSet();
    const problems = methodSetProblems(listed(), specMethods(), {
      omitted: { ...set.omitted, eth_call: 'x', eth_mining: 'y' },
      added: { ...set.added, svc_gone: 'z' },
    });
    expect(problems).toEqual([
      'eth_call: served, yet omitted by "eth_call"',
      'eth_mining: omitted, but execution-apis has no such method (stale omission)',
      'svc_gone: listed as added, but not served',
    ]);
  });

  it('behavior: docs/rpc.md shows the same omissions with the same reasons, and the number of methods served', () => {
    expect(documentedOmissions()).toEqual(methodSet().omitted);
    expect(/serves exactly the (\d+) methods/.exec(read('../../docs/rpc.md'))?.[1]).toBe(String(specMethods().length));
  });

  it("behavior: methods.txt is the vendored release's list: every method of the vendored method files is in it", () => {
    const files = ['block', 'client', 'execute', 'fee_market', 'fill', 'filter', 'state', 'submit', 'transaction'];
    const vendored = files.flatMap((f) =>
      (parse(read(`./execution-apis/methods/${f}.yaml`)) as { name: string }[]).map((m) => m.name),
    );
    expect(vendored.length).toBeGreaterThan(30);
    expect(vendored.filter((m) => !listed().includes(m))).toEqual([]);
    expect(listed()).toEqual([...listed()].sort());
  });
});
