import type { TestProject } from 'vitest/node';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/common/log.js';
import { createMetrics } from '../../src/common/metrics.js';
import { Shutdown } from '../../src/common/shutdown.js';
import { PGLITE_MEMORY, loadDatabaseConfig } from '../../src/common/db/config.js';
import { createDbClient } from '../../src/common/db/client.js';
import { startDevnet } from '../../src/devnet/devnet.js';
import { writeStateFile, type DevnetState } from '../../src/devnet/state-file.js';

declare module 'vitest' {
  export interface ProvidedContext {
    devnet: DevnetState;
    devnetStateFile: string;
  }
}

/**
 * The shared e2e fixture: one devnet started with the same code as `l2stack devnet`, on PGlite or on
 * Postgres (DATABASE_HOST) like the rest of the suite. Test files get its state with inject('devnet').
 * Test accounts: state.accounts[10..19] are reserved for tests, by area, so files never share a nonce:
 * devnet 10-11, token-api 12-13, rpc 14-15, state 16, relayer 17-19.
 */
/** The devnet starts in ~30 s on a quiet machine and took up to ~150 s on a loaded one. */
const SETUP_DEADLINE_MS = 600_000;

export default async function setup(project: TestProject) {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'info',
    name: 'e2e-devnet',
    destination: new Writable({
      write: (chunk, _e, cb) => (lines.push(String(chunk)), lines.length > 2_000 && lines.shift(), cb()),
    }),
  });
  const shutdown = new Shutdown(logger);
  const common = { logger, metrics: createMetrics({ defaultMetrics: false }), shutdown };
  const db = await createDbClient(loadDatabaseConfig({ ...process.env, DATABASE_PGLITE_DIR: PGLITE_MEMORY }));
  shutdown.add('database', () => db.close());
  // The coordinator keeps its progress in its own schema; a unique one keeps runs apart on Postgres. Teardown
  // runs in reverse order: devnet (coordinator) first, then this drop, then the database client.
  const schema = `e2e_devnet_${process.pid}`;
  shutdown.add('coordinator schema', async () => {
    if (db.kind === 'postgres') await db.knex.raw('drop schema if exists ?? cascade', [schema]);
  });
  try {
    // A deadline, so a start-up that hangs fails the run with its log instead of holding CI until its own limit.
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the e2e devnet did not start within ${SETUP_DEADLINE_MS / 1_000} s`)),
        SETUP_DEADLINE_MS,
      );
    });
    const devnet = await Promise.race([
      startDevnet({ common, db, options: { historyHours: 26, coordinatorSchema: schema } }),
      deadline,
    ]).finally(() => clearTimeout(timer));
    const stateFile = join(mkdtempSync(join(tmpdir(), 'l2stack-e2e-')), 'devnet.json');
    await writeStateFile(stateFile, devnet.state);
    project.provide('devnet', devnet.state);
    project.provide('devnetStateFile', stateFile);
  } catch (err) {
    await shutdown.run('setup failed');
    process.stderr.write(lines.slice(-30).join(''));
    throw err;
  }
  return () => shutdown.run('e2e done');
}
