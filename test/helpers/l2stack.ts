import { fileURLToPath } from 'node:url';

/** The checkout's `l2stack` command (benchmarks run it as shipped: `[L2STACK_BIN, ...args]`). */
export const L2STACK_BIN = fileURLToPath(new URL('../../bin/l2stack.js', import.meta.url));

/**
 * V8 tiers a WebAssembly function up to its optimising compiler once it has run for this budget (V8's default:
 * 1,800,000). A test's `l2stack` process lives seconds, so embedded PGlite's functions optimised at its default
 * were compiled in the background for nothing: ×100 took 1.1-1.3 s of CPU off each relayer start (fault.test with
 * 11 starts, alternating runs: 78.6 and 78.5 s of CPU -> 66.9 and 64.6 s). Only when code is compiled changes;
 * what it does does not. Not the product's default: past its first seconds, a relayer on PGlite claimed 8-14 %
 * slower with it (relayer-start bench, 600 claims).
 */
const SHORT_LIVED = '--wasm-tiering-budget=180000000';

/** Node's arguments to run `l2stack <args>` from a test: `spawn(process.execPath, l2stackArgs('relayer'))`. */
export function l2stackArgs(...args: string[]): string[] {
  return [SHORT_LIVED, L2STACK_BIN, ...args];
}
