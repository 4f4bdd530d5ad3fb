import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { SHORT_LIVED } from './test/helpers/l2stack.js';

// Real chains and databases: generous timeouts (a CI run on a loaded 2-core machine took a 60 s test past
// 60 s, four times in one run at load ~24).
const shared = { testTimeout: 180_000, hookTimeout: 180_000 };
/** CI's record of the files that do not depend on the database (test/helpers/db-record.ts); inert unless asked. */
const record = { setupFiles: ['test/helpers/db-record.ts'] };

/**
 * The slow tier: files that took 14 s or more at load 15-22 (2026-11-26, per-file timings of vitest's JSON
 * report), because they spawn processes or devnets, generate and compile clients, write hundreds of MiB to
 * an on-disk database, or run many random histories. `npm run test:fast` leaves them out; `npm test` runs
 * them. A new file that starts chains, spawns `l2stack`, or runs for more than a few seconds belongs here.
 * The second group took 6-35 s each in the fast tier (2026-11-29, load 8-10; 230 of its 349 s of file time).
 */
const SLOW = [
  'test/relayer/chain-reset.test.ts', // spawns a relayer, replaces its two anvils under it
  'test/adversarial/**', // hostile recipes against whole services, each with a canary (~330 s)
  'test/clients/**', // generated TypeScript and Python clients driven against real APIs
  'test/contract/openapi-generator.test.ts', // openapi-generator (Java) generates and compiles clients
  'test/contract/openrpc-client.test.ts', // @open-rpc/generator builds a client
  'test/contract/typed-handlers.test.ts', // tsc over the project, twice
  'test/conformance/test-coverage.test.ts',
  'test/conformance/execution-apis.test.ts',
  'test/conformance/user-operations.test.ts', // the devnet's bundler (Alto)
  'test/conformance/differential.test.ts', // ~400 calls each sent twice, through the endpoint and straight to anvil
  'test/common/pglite-maintenance.test.ts', // 2 x 600,000 row updates on an on-disk PGlite
  'test/common/pglite-lock.test.ts', // opens on-disk PGlite directories
  'test/state/proof-reads.test.ts', // random histories proved two ways, pruned and rolled back
  'test/state/ingest-batch.test.ts', // reorgs on anvil during batched ingest
  'test/rpc/keys.test.ts',
  'test/rpc/fuzz.test.ts',
  'test/token-api/properties.test.ts',
  'test/token-api/manipulation.test.ts', // a DEX on anvil pushed phase by phase, two indexers (25-50 s)
  'test/contract/token-api-prism.test.ts', // spawns Prism (prism proxy) in front of the token API (~20 s)
  'test/relayer/change-feed.test.ts', // the relayer's reads against an oracle over many histories (35 s)
  'test/state/tree.test.ts', // random insert/update/delete histories, every proof checked (28 s)
  'test/relayer/requeue.test.ts',
  'test/relayer/lost-claim.test.ts', // waits out a stranded claim on anvil
  'test/cli.test.ts', // spawns `l2stack` per command
  'test/relayer/db.test.ts',
  'test/common/pglite-template.test.ts', // opens PGlite directories with and without the template
  'test/rpc/ws.test.ts',
  'test/state/poseidon2-verifier-contract.test.ts', // compiles and deploys the Solidity verifier
  'test/rpc/sends.test.ts',
  'test/state/verify-proof-cli.test.ts', // spawns `l2stack verify-proof`
  'test/rpc/ws-logs-ended.test.ts',
  'test/relayer/transitions.test.ts',
  'test/relayer/economics.test.ts',
  'test/relayer/multi-key.test.ts',
  'test/relayer/claim-calldata.test.ts',
  'test/rpc/filters.test.ts',
];

/**
 * The longest files of a clean clone's `npm test` (2026-11-29, 12-48 s each), started first in their project. Vitest
 * runs the projects one after another and, without timings from an earlier run, a project's largest files first: a
 * 33-48 s file that starts late runs alone at the end of its project while the other worker waits.
 */
const LONGEST = [
  'test/e2e/relayer/fault.test.ts',
  'test/e2e/devnet/permissionless.test.ts',
  'test/e2e/relayer/chain-faults.test.ts',
  'test/e2e/relayer/outage.test.ts',
  'test/e2e/devnet/dev.test.ts',
  'test/adversarial/rpc-filters.test.ts',
  'test/adversarial/connections.test.ts',
  'test/adversarial/rpc-ws-resumes.test.ts',
  'test/adversarial/rpc-gas-bomb.test.ts',
  'test/relayer/lost-claim.test.ts',
  'test/adversarial/rpc-raw-tx-flood.test.ts',
  'test/rpc/keys.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONGEST.findIndex((p) => f.moduleId.endsWith(p));
      return i < 0 ? LONGEST.length : i;
    };
    // Stable: each project's files stay together, in the order the base gave the rest.
    const order = new Map(sorted.map((f, i) => [f, i]));
    const project = new Map(sorted.map((f) => [f.project.name, order.get(f)!]));
    return sorted.sort(
      (a, b) =>
        project.get(a.project.name)! - project.get(b.project.name)! ||
        rank(a) - rank(b) ||
        order.get(a)! - order.get(b)!,
    );
  }
}

export default defineConfig({
  test: {
    pool: 'forks',
    // The workers, as the `l2stack` processes tests start: PGlite's WebAssembly unoptimised (test/helpers/l2stack.ts).
    execArgv: [SHORT_LIVED],
    // Three files at once on this 2-core machine: files wait (for blocks, a process's start, a timeout they test), and
    // with two at once the machine was 1.59-1.65 of its 2 cores busy over a whole run, with three 1.84-1.90. `npm test`
    // (2026-11-29, quiet): two at once 405-454 s (three runs), three 353-371 s (three runs, all green). Every project
    // has the same number, so all share one pool and the next project's files start while the last of the one before
    // still run; with `fast` on two workers vitest ran it as a group of its own, after the others had all ended, at
    // 1.0-1.8 cores busy (280 -> 269 s, 2026-11-29). `npm run test:fast` alone asks for two (--maxWorkers=2 in
    // package.json): a third worker there only imported everything once more (49-53 s and 86-91 s of CPU on three,
    // 46-51 s and 71-78 s on two).
    maxWorkers: 3,
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        // `npm run test:fast`: unit and contract tests, no devnet, none of the slow files. One process per worker
        // for all its files (isolate: false): importing the modules again for every file was half of the
        // tier's CPU (measured at load 8-20: 340 s of CPU isolated, 165 s shared). A fast file therefore
        // leaves no global state behind (env, timers, listeners): each closes what it opens in afterAll.
        test: {
          ...shared,
          ...record,
          name: 'fast',
          isolate: false,
          // openTestDb gives a closed file's PGlite to the next file of the worker (test/helpers/db.ts).
          env: { L2STACK_TEST_PGLITE_REUSE: '1' },
          include: ['test/**/*.test.ts'],
          exclude: ['test/e2e/**', 'test/bench/**', 'node_modules/**', ...SLOW],
        },
      },
      {
        extends: true,
        // Shared modules too (isolate: false), under the fast tier's rule: measured on PGlite, 356 -> 285 s of wall
        // time and 641 -> 501 s of CPU, importing 91 -> 18 s (2026-11-29, 136 tests, all passed both ways).
        test: {
          ...shared,
          ...record,
          name: 'slow',
          isolate: false,
          env: { L2STACK_TEST_PGLITE_REUSE: '1' },
          include: SLOW.map((p) => (p.endsWith('/**') ? `${p}/*.test.ts` : p)),
        },
      },
      {
        extends: true,
        // One devnet (two anvil chains, contracts, history, coordinator) shared by every e2e file. Shared modules
        // too (isolate: false), under the fast tier's rule: importing 24-25 -> 10 s, wall 198-213 -> 189-196 s for the
        // project alone, runs alternated (2026-11-29, load 4-7, 62 tests passed each way).
        test: {
          ...shared,
          name: 'e2e',
          isolate: false,
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/e2e/global-setup.ts'],
        },
      },
    ],
  },
});
