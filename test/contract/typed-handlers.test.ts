import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

/**
 * `npm run typecheck` must refuse a handler whose params or result the spec (specs/rpc.openrpc.json, via
 * generated/rpc/methods.ts' RpcMethodMap and defineMethod) does not allow. test/types/ holds a wrong fixture and its
 * correct twin, outside the project's tsconfig, compiled here together with `tsc --noEmit` (one program: one tsc start
 * and one check of what both import, ~5 s of CPU less than a program each). The twin must compile cleanly, so the
 * wrong one cannot fail for an unrelated reason (a broken import).
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

interface Compiled {
  code: number;
  output: string;
}

const compile = (project: string) =>
  new Promise<Compiled>((resolve) => {
    execFile(
      process.execPath,
      [tsc, '-p', project, '--pretty', 'false'],
      { cwd: root, maxBuffer: 8 * 1024 * 1024 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, output: `${stdout}${stderr}` });
      },
    );
  });

/** `line code` of each error marked in the fixture: a `// expect TSxxxx` comment names the error of the next line. */
function expectedErrors(file: string): string[] {
  const lines = readFileSync(new URL(`../types/${file}`, import.meta.url), 'utf8').split('\n');
  const out: string[] = [];
  lines.forEach((text, i) => {
    const m = /^\/\/ expect (TS\d+)$/.exec(text.trim());
    if (m) out.push(`${i + 2} ${m[1]}`);
  });
  return out;
}

/** `line code` of each error tsc reported in the fixture (first line of each diagnostic). */
function reportedErrors(output: string, file: string): string[] {
  const re = new RegExp(`^test/types/${file.replace(/\./g, '\\.')}\\((\\d+),\\d+\\): error (TS\\d+):`, 'gm');
  return [...output.matchAll(re)].map((m) => `${m[1]} ${m[2]}`);
}

describe('RPC handlers are typed by the spec', () => {
  it('a handler with a result or params the spec does not allow fails tsc --noEmit, with exactly the marked errors', async () => {
    const compiled = await compile('test/types/tsconfig.fixtures.json');

    // The twin has no error, and nothing either imports has one.
    expect(compiled.output).not.toMatch(/^(?!test\/types\/wrong-result\.fixture\.ts)\S+\(\d+,\d+\): error/m);

    const expected = expectedErrors('wrong-result.fixture.ts');
    expect(expected.length).toBeGreaterThanOrEqual(5);
    expect(compiled.code).not.toBe(0);
    // Every error is in the wrong fixture, each on a marked line with the marked code.
    expect(reportedErrors(compiled.output, 'wrong-result.fixture.ts')).toEqual(expected);
    expect(compiled.output).toContain(`Type 'number' is not assignable to type 'MethodAnswer<"eth_getBalance">'`);
    expect(compiled.output).toContain(`Type 'RawJson<Block>' is not assignable to type 'RawJson<string>'`);
    expect(compiled.output).toContain(
      `Argument of type '"eth_notInTheSpec"' is not assignable to parameter of type 'keyof RpcMethodMap'`,
    );
  }, 240_000);
});
