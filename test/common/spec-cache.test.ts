import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { l2stackCacheDir } from '../../src/common/cache-dir.js';
import { loadOpenApi, specPath } from '../../src/common/http/spec.js';
import { parseYamlCached } from '../../src/common/http/spec-cache.js';

const cacheFile = (name: string, text: string) =>
  join(l2stackCacheDir()!, `${name}-${createHash('sha256').update(text).digest('hex').slice(0, 32)}.json`);

describe('specs parsed once per content', () => {
  it('behavior: a spec loads as the YAML parser reads it, the first time and from the cache', () => {
    const text = readFileSync(specPath('relayer-api.openapi.yaml'), 'utf8');
    rmSync(cacheFile('relayer-api.openapi.yaml', text), { force: true });
    const first = loadOpenApi('relayer-api.openapi.yaml');
    expect(existsSync(cacheFile('relayer-api.openapi.yaml', text))).toBe(true);
    const second = loadOpenApi('relayer-api.openapi.yaml');
    expect(first).toEqual(parse(text));
    expect(second).toEqual(first);
    expect(second).not.toBe(first); // every caller gets its own copy to mutate
  });

  it('behavior: changed text is parsed again, never answered from the cache of the old text', () => {
    const name = `spec-cache-test-${process.pid}.yaml`;
    const before = 'a: 1\nb: [x, y]\n';
    const after = 'a: 2\nb: [x]\n';
    try {
      expect(parseYamlCached(name, before)).toEqual({ a: 1, b: ['x', 'y'] });
      expect(parseYamlCached(name, after)).toEqual({ a: 2, b: ['x'] });
      expect(parseYamlCached(name, before)).toEqual({ a: 1, b: ['x', 'y'] });
    } finally {
      for (const t of [before, after]) rmSync(cacheFile(name, t), { force: true });
    }
  });
});
