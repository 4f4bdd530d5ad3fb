import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Every .ts file under a directory (node_modules and fixtures left out). */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'fixtures') return [];
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/**
 * Rules of the suite (issue 37). It never retries: a flake is found and fixed, not run again until it passes. No vitest
 * config and no test sets `retry`, and no CI script passes `--retry`; .ci/run prints every test that timed out.
 */
describe('suite rules', () => {
  it('structure: no vitest retry option in configs or tests, no --retry in CI', () => {
    const offenders: string[] = [];
    for (const file of [
      ...files('test'),
      ...readdirSync('.').filter((f) => /^vitest.*\.ts$/.test(f)),
      'test/image/vitest.config.ts',
    ]) {
      const text = readFileSync(file, 'utf8');
      if (/\bretry\s*:\s*(?!0\b)/.test(text) && !file.endsWith('suite-rules.test.ts')) offenders.push(file);
    }
    if (/--retry\b/.test(readFileSync('.ci/run', 'utf8'))) offenders.push('.ci/run');
    expect(offenders).toEqual([]);
  });

  it("structure: no unbounded wait for a transaction: mined() (bounded, names the transaction) instead of ethers' wait()", () => {
    // ethers' wait() without a timeout can miss a block anvil mines before its poller starts and wait for ever
    // (src/common/chain/mined.ts); wait(confirms, timeoutMs) is bounded.
    const offenders = files('test').filter(
      (file) =>
        /\.wait\(\)|waitForTransaction\([^,()]*\)/.test(readFileSync(file, 'utf8')) &&
        !file.endsWith('suite-rules.test.ts'),
    );
    expect(offenders).toEqual([]);
  });

  it('structure: tests start `l2stack` through l2stackArgs (test/helpers/l2stack.ts), benchmarks and the image as shipped', () => {
    // The helper runs it as a short-lived process (its V8 flag); benchmarks measure the command as users run it.
    const offenders = files('test').filter(
      (file) =>
        !/^test\/(bench|image|soak)\/|^test\/helpers\/l2stack\.ts$|suite-rules\.test\.ts$/.test(file) &&
        readFileSync(file, 'utf8').includes('bin/l2stack.js'),
    );
    expect(offenders).toEqual([]);
  });
});
