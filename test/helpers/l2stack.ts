import { spawnSync, type SpawnSyncOptionsWithStringEncoding, type SpawnSyncReturns } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The checkout's `l2stack` command (benchmarks run it as shipped: `[L2STACK_BIN, ...args]`). */
export const L2STACK_BIN = fileURLToPath(new URL('../../bin/l2stack.js', import.meta.url));

/**
 * Node's flag for every process of the suite (vitest's workers, vitest.config.ts, and the `l2stack` processes tests
 * start): embedded PGlite's WebAssembly runs on V8's baseline code (Liftoff) only. A test's process lives seconds, and
 * V8 spent much of its CPU optimising that code in the background (TurboFan) for a future it never has. Measured
 * 2026-11-29, alternating runs: fault.test (14 relayer starts and their claims) 77.5 and 79.2 -> 61.5 and 63.4 s of CPU
 * (wall 57.5 and 58.2 -> 47.8 and 48.9 s; start-up to claiming, median, 1.4-1.7 -> 1.1-1.4 s) against the tiering
 * budget ×100 used before, which had itself taken 1.1-1.3 s of CPU off each start; in the workers, `test:fast` 73.3 ->
 * 63.5 s of CPU, and the six files that write the most through PGlite (pglite-maintenance, rpc-filters, change-feed,
 * proof-reads, pglite-template, tree) 77.9 -> 72.4 s. Only how code is compiled changes; what it does does not. Not
 * the product's default: a relayer that runs for hours gains from optimised code (a PGlite upsert loop ran ~5 %
 * slower on Liftoff alone). Benchmarks run the command as shipped.
 */
export const SHORT_LIVED = '--liftoff-only';

/** Node's arguments to run `l2stack <args>` from a test: `spawn(process.execPath, l2stackArgs('relayer'))`. */
export function l2stackArgs(...args: string[]): string[] {
  return [SHORT_LIVED, L2STACK_BIN, ...args];
}

/**
 * `l2stack <args>` run to its end from a test, its output as text: bounded by `timeout` (60 s unless given), with the
 * test's environment unless `env` replaces it.
 */
export function runL2stack(
  args: string[],
  options: Omit<SpawnSyncOptionsWithStringEncoding, 'encoding'> = {},
): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, l2stackArgs(...args), { timeout: 60_000, ...options, encoding: 'utf8' });
}
