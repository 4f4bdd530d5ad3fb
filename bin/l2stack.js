#!/usr/bin/env node
// Entry point of the `l2stack` command. In a checkout (src/ present, tsx installed) it runs the TypeScript
// sources directly so there is no stale build to forget; in the container image only dist/ exists.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli.ts', import.meta.url);
let useSource = existsSync(source);
if (useSource) {
  try {
    const { register } = await import('tsx/esm/api');
    register();
  } catch {
    useSource = false;
  }
}
if (useSource) {
  await import(source.href);
} else {
  await import(new URL('../dist/src/cli.js', import.meta.url).href);
}
