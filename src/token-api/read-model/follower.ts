import type { DbClient } from '../../common/db/client.js';
import { errorMessage } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { sleep } from '../../common/shutdown.js';
import { READ_MODEL_CHANNEL } from '../migrations.js';
import { ReadModel } from './model.js';
import { readDelta, readHead } from './source.js';

export interface ReadModelHandle {
  model: ReadModel;
  /** Loads every change committed before the call; resolves once they are served. */
  sync(): Promise<void>;
  /** For readiness: when the last load succeeded and the last failure, if any since. */
  health(): { loadedAt: number | undefined; failing: string | undefined };
  stop(): Promise<void>;
}

export interface FollowOptions {
  db: DbClient;
  schema: string;
  logger: Logger;
  /** Fallback poll: a notification lost with a dropped connection delays a replica at most this long. */
  pollMs: number;
  signal: AbortSignal;
}

type Unsubscribe = () => Promise<void>;

/**
 * Subscribes to the schema's change notifications (the database's listen: a dedicated PostgreSQL connection, or
 * PGlite's in-process listen, whose one connection is the writer's too, so the indexer's commits notify this process
 * directly). Each time LISTEN holds, the first time too, one load picks up what changed before: on PostgreSQL it holds
 * only some time after db.listen has returned, often after the first load, and a change committed in between would
 * otherwise wait for the fallback poll (a replica started while the indexer writes served it pollMs late).
 */
async function subscribe(options: FollowOptions, onNotify: () => void): Promise<Unsubscribe> {
  const { db, schema, logger } = options;
  return db.listen(READ_MODEL_CHANNEL, (payload) => payload === schema && onNotify(), {
    logger,
    onListening: (listening) => listening && onNotify(),
  });
}

/**
 * Loads the read model (every row), then follows the database: each notification, and each poll, loads the rows changed
 * since the version held. Loads never overlap; notifications arriving during one are folded into a single next load.
 */
export async function followReadModel(options: FollowOptions): Promise<ReadModelHandle> {
  const { db, schema, logger, signal } = options;
  const model = new ReadModel();
  let loadedAt: number | undefined;
  let failing: string | undefined;
  let pollFailing: string | undefined;
  let running: Promise<void> | undefined;
  let again = false;

  const loadOnce = async () => {
    const started = Date.now();
    const delta = await readDelta(db, schema, model.version);
    model.apply(delta);
    loadedAt = started;
    failing = undefined;
  };
  // One load at a time; a request during a load gets one more load after it (which sees its changes).
  const load = (): Promise<void> => {
    if (running) {
      again = true; // the running load checks this after its current read, within the same promise
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await loadOnce();
        } while (again && !signal.aborted);
      } catch (err) {
        failing = errorMessage(err);
        logger.warn({ err: failing }, 'read model: load failed; serving the last version');
        throw err;
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
  const kick = () => void load().catch(() => undefined);

  // Subscribe first: a change committed during the first load then still triggers a load after it (a notification, or
  // the load once LISTEN holds).
  const unsubscribe = await subscribe(options, kick);
  for (let attempt = 0; ; attempt++) {
    try {
      await load();
      break;
    } catch (err) {
      if (signal.aborted) throw err;
      if (!(await sleep(Math.min(500 * 2 ** attempt, 10_000), signal))) throw err;
    }
  }
  logger.info({ version: model.version, ...model.size }, 'read model loaded');

  const poller = (async () => {
    while (await sleep(options.pollMs, signal)) {
      try {
        const head = await readHead(db, schema);
        pollFailing = undefined;
        if (head > model.version) kick();
      } catch (err) {
        pollFailing = errorMessage(err);
      }
    }
  })();

  return {
    model,
    sync: load,
    health: () => ({ loadedAt, failing: failing ?? pollFailing }),
    stop: async () => {
      await unsubscribe();
      await running?.catch(() => undefined);
      await poller;
    },
  };
}
