import type { Client as PgClient } from 'pg';
import type { DbClient } from './client.js';
import { pgConnection } from './listen.js';
import type { Logger } from '../log.js';
import { sleep } from '../shutdown.js';

export interface Leadership {
  /** Aborted when leadership is lost (connection to Postgres gone) or released. */
  signal: AbortSignal;
  release(): Promise<void>;
}

/** Names share one keyspace; hashing keeps keys stable across processes and versions. */
function lockKey(name: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(`l2stack:${name}`)) h = ((h ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return BigInt.asIntN(64, h);
}

// PGlite lives inside one process, so one in-process registry is the whole story there.
const localHolders = new Set<string>();

type LeadershipOptions = { signal: AbortSignal; retryMs?: number; logger?: Logger; onStandby?: () => void };

async function localLeadership(
  name: string,
  retryMs: number,
  options: LeadershipOptions,
): Promise<Leadership | undefined> {
  while (localHolders.has(name)) {
    options.onStandby?.();
    if (!(await sleep(retryMs, options.signal))) return undefined;
  }
  localHolders.add(name);
  const controller = new AbortController();
  return {
    signal: controller.signal,
    release: async () => {
      localHolders.delete(name);
      controller.abort(new Error('released'));
    },
  };
}

/** The lock `key`, just taken on `conn`, as a Leadership that ends when released or when `conn` is lost. */
function holdLeadership(conn: PgClient, key: string, name: string, logger: Logger | undefined): Leadership {
  const controller = new AbortController();
  const lost = (err?: Error) => {
    if (!controller.signal.aborted) {
      logger?.warn({ lock: name, err }, 'lost the leadership connection; stopping writes');
      controller.abort(err ?? new Error('connection closed'));
    }
  };
  conn.on('error', lost);
  conn.on('end', () => lost());
  // A lock held on a silently dead connection would look held forever: probe it.
  const heartbeat = setInterval(() => void conn.query('select 1').catch((err: Error) => lost(err)), 5_000);
  heartbeat.unref();
  logger?.info({ lock: name }, 'acquired leadership');
  return {
    signal: controller.signal,
    release: async () => {
      clearInterval(heartbeat);
      controller.abort(new Error('released'));
      await conn.query('select pg_advisory_unlock($1::bigint)', [key]).catch(() => undefined);
      await conn.end().catch(() => undefined);
    },
  };
}

/**
 * Waits until this process is the single writer `name` (an indexer, a relayer direction, the devnet
 * coordinator). On Postgres this is a session advisory lock held on a dedicated connection: if the
 * process dies or the connection breaks, Postgres releases it and a standby takes over; the returned
 * signal tells the holder to stop writing. Resolves undefined if `signal` aborts first. `onStandby` is
 * called whenever the lock was found held by another holder (so a caller can report that it stands by).
 */
export async function acquireLeadership(
  client: DbClient,
  name: string,
  options: LeadershipOptions,
): Promise<Leadership | undefined> {
  const retryMs = options.retryMs ?? 1_000;
  if (client.config.kind === 'pglite') return localLeadership(name, retryMs, options);
  const key = lockKey(name).toString();
  let waitingLogged = false;
  for (;;) {
    if (options.signal.aborted) return undefined;
    // Loaded here: embedded PGlite never needs the Postgres driver, and importing it costs a start ~60 ms of CPU.
    const { default: pg } = await import('pg');
    const conn = new pg.Client({ ...pgConnection(client.config), application_name: `l2stack ${name}` });
    try {
      await conn.connect();
      for (;;) {
        const { rows } = await conn.query<{ locked: boolean }>('select pg_try_advisory_lock($1::bigint) as locked', [
          key,
        ]);
        if (rows[0]?.locked) return holdLeadership(conn, key, name, options.logger);
        options.onStandby?.();
        if (!waitingLogged) options.logger?.info({ lock: name }, 'another instance is active; standing by');
        waitingLogged = true;
        if (!(await sleep(retryMs, options.signal))) {
          await conn.end().catch(() => undefined);
          return undefined;
        }
      }
    } catch (err) {
      await conn.end().catch(() => undefined);
      options.logger?.warn({ lock: name, err }, 'could not reach the database for the leadership lock; retrying');
      if (!(await sleep(retryMs, options.signal))) return undefined;
    }
  }
}
