import { appendFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';

/**
 * The recorder behind test/helpers/db-record.ts, in one process: notes every read of a DATABASE_* variable
 * (directly, by spreading or enumerating process.env) and every PostgreSQL connection. A child that inherits
 * the environment is not noted for the spawn's own copy of it: it loads this module (NODE_OPTIONS --import) and
 * notes what it reads itself, under the same test file, at once (it may be killed). A worker thread gets a copy
 * of the environment this process cannot see read: it counts as read. Plain JavaScript, as Node loads it.
 */
const KEY = Symbol.for('l2stack.dbRecorder');

/** @typedef {{ file: string; touched: Set<string>; onTouch?: (what: string) => void }} Recorder */

/** @returns {Recorder} */
export function installRecorder() {
  const g = /** @type {Record<symbol, Recorder | undefined>} */ (/** @type {unknown} */ (globalThis));
  const existing = g[KEY];
  if (existing) return existing;
  /** @type {Recorder} */
  const rec = { file: '', touched: new Set() };
  const touch = (/** @type {string} */ what) => {
    if (rec.touched.has(what)) return;
    rec.touched.add(what);
    rec.onTouch?.(what);
  };
  const note = (/** @type {string | symbol} */ key) => {
    if (typeof key !== 'string' || !key.startsWith('DATABASE_')) return;
    // Node copying the environment for a child process (which records itself, see above).
    if (/\bat normalizeSpawnArguments \(node:child_process:/.test(new Error().stack ?? '')) return;
    touch(`read ${key}`);
  };
  process.env = new Proxy(process.env, {
    get: (env, key) => (note(key), Reflect.get(env, key)),
    has: (env, key) => (note(key), Reflect.has(env, key)),
    getOwnPropertyDescriptor: (env, key) => (note(key), Reflect.getOwnPropertyDescriptor(env, key)),
    // Assigned on process.env itself: it takes only whole data descriptors, not the proxy's partial ones.
    set: (env, key, value) => Reflect.set(env, key, value),
  });
  const require = createRequire(import.meta.url);
  try {
    // The driver knex and the LISTEN/lock connections use (src/common/db): one CommonJS instance per process.
    const pg = require('pg');
    const connect = pg.Client.prototype.connect;
    pg.Client.prototype.connect = function (/** @type {unknown[]} */ ...a) {
      touch('a PostgreSQL connection');
      return connect.apply(this, a);
    };
  } catch {
    // not in this checkout's tree: the process cannot load our database code either
  }
  const threads = require('node:worker_threads');
  const Worker = threads.Worker;
  threads.Worker = class extends Worker {
    constructor(/** @type {ConstructorParameters<typeof Worker>} */ ...a) {
      touch('a worker thread');
      super(...a);
    }
  };
  syncBuiltinESMExports();
  // Children that inherit the environment load this module and record under the file current at their spawn.
  const flag = `--import=${import.meta.url}`;
  if (!(process.env.NODE_OPTIONS ?? '').includes(flag))
    process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${flag}`.trim();
  return (g[KEY] = rec);
}

/** Appends what `rec` noted for its file to `target` (a JSON line per call); clears it. */
export function flush(/** @type {Recorder} */ rec, /** @type {string} */ target) {
  if (rec.file) appendFileSync(target, `${JSON.stringify({ file: rec.file, touched: [...rec.touched] })}\n`);
  rec.touched.clear();
}

/** Names the file the next notes belong to, for this process and the children it spawns from now on. */
export function current(/** @type {Recorder} */ rec, /** @type {string} */ file) {
  rec.file = file;
  process.env.L2STACK_DB_RECORD_FILE = file;
}

// Loaded by NODE_OPTIONS in a child: record under the spawning file, each note at once (and once).
const target = process.env.L2STACK_DB_RECORD;
const file = process.env.L2STACK_DB_RECORD_FILE;
if (target && file && !(/** @type {Record<symbol, unknown>} */ (/** @type {unknown} */ (globalThis))[KEY])) {
  const rec = installRecorder();
  rec.file = file;
  rec.onTouch = (what) =>
    appendFileSync(target, `${JSON.stringify({ file, touched: [`${what} (in a child process)`] })}\n`);
}
