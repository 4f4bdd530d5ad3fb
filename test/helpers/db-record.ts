import { relative, resolve } from 'node:path';
import { afterAll, expect } from 'vitest';
import { current, flush, installRecorder } from './db-record-core.mjs';

/**
 * CI's record of which fast and slow files depend on the database (issue 37 item 4): .ci/run sets
 * L2STACK_DB_RECORD on its PostgreSQL pass, and its PGlite pass runs again only the files this record does not
 * clear. A file is cleared when, from the start of its set-up until the next file's, nothing in its worker or in
 * the processes it started read a DATABASE_* variable (directly, or by spreading or enumerating the environment)
 * and no PostgreSQL connection was opened (db-record-core.mjs): the database is chosen from DATABASE_HOST alone
 * (src/common/db/config.ts), so such a file ran exactly as it would on PGlite. Files that never finish are not
 * cleared (no line is written for them), nor are e2e files (this setup is not theirs; their devnet has a database).
 * Without L2STACK_DB_RECORD this does nothing.
 */
const named = process.env.L2STACK_DB_RECORD;

if (named) {
  // Absolute, for the children that record too and may run in another directory (Alto's bundler does).
  const target = (process.env.L2STACK_DB_RECORD = resolve(named));
  // Installed once per worker (the fast and slow projects share a worker's modules and globals between files).
  const rec = installRecorder();
  // What happened since the previous file's afterAll is its own (a late close, a timer it left): a second line.
  if (rec.touched.size > 0) flush(rec, target);
  current(rec, relative(process.cwd(), expect.getState().testPath ?? ''));
  afterAll(() => flush(rec, target));
}
