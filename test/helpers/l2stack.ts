import { fileURLToPath } from 'node:url';

/** The checkout's `l2stack` command (benchmarks run it as shipped: `[L2STACK_BIN, ...args]`). */
export const L2STACK_BIN = fileURLToPath(new URL('../../bin/l2stack.js', import.meta.url));

/**
 * A test's `l2stack` process lives seconds, and V8 spent much of its CPU optimising embedded PGlite's WebAssembly
 * (TurboFan, in the background) for a future it never has: with Liftoff's code only, fault.test (14 relayer starts
 * and their claims) took 61.5 and 63.4 s of CPU instead of 77.5 and 79.2 s with the tiering budget ×100 this helper
 * used before (alternating runs, 2026-11-29; wall 47.8 and 48.9 s against 57.5 and 58.2 s; start-up to claiming,
 * median, 1.1-1.4 s against 1.4-1.7 s), and that budget had already taken 1.1-1.3 s of CPU off each start against
 * V8's default. Only how code is compiled changes; what it does does not. Not the product's default: a relayer that
 * runs for hours gains from optimised code (a PGlite upsert loop ran ~5 % slower on Liftoff alone).
 */
const SHORT_LIVED = '--liftoff-only';

/** Node's arguments to run `l2stack <args>` from a test: `spawn(process.execPath, l2stackArgs('relayer'))`. */
export function l2stackArgs(...args: string[]): string[] {
  return [SHORT_LIVED, L2STACK_BIN, ...args];
}
