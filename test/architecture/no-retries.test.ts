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
 * The suite never retries (issue 37): a flake is found and fixed, not run again until it passes. No vitest
 * config and no test sets `retry`, and no CI script passes `--retry`; .ci/run prints every test that timed out.
 */
describe('no retries', () => {
  it('structure: no vitest retry option in configs or tests, no --retry in CI', () => {
    const offenders: string[] = [];
    for (const file of [...files('test'), ...readdirSync('.').filter((f) => /^vitest.*\.ts$/.test(f)), 'test/image/vitest.config.ts']) {
      const text = readFileSync(file, 'utf8');
      if (/\bretry\s*:\s*(?!0\b)/.test(text) && !file.endsWith('no-retries.test.ts')) offenders.push(file);
    }
    if (/--retry\b/.test(readFileSync('.ci/run', 'utf8'))) offenders.push('.ci/run');
    expect(offenders).toEqual([]);
  });
});
