#!/usr/bin/env node
// Entry point of the `l2stack` command. In a checkout (src/ present) it runs the TypeScript sources, so there
// is no stale build to forget: as JavaScript transpiled on demand into node_modules/.cache/l2stack (see
// source-cache.js; a start then loads plain modules), or through tsx's loader when that cache cannot be
// used. In the container image only dist/ exists.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const source = new URL('../src/cli.ts', import.meta.url);
let entry;
if (existsSync(source)) {
  const { cachedEntry } = await import('./source-cache.js');
  entry = await cachedEntry(root);
  // Stack traces name the TypeScript lines, as under tsx.
  if (entry) process.setSourceMapsEnabled(true);
  if (!entry) {
    try {
      const { register } = await import('tsx/esm/api');
      register();
      entry = source;
    } catch {
      entry = undefined;
    }
  }
}
await import((entry ?? new URL('../dist/src/cli.js', import.meta.url)).href);
