import { readFileSync } from 'node:fs';
import type { DatabaseConfig } from './config.js';
import type { Logger } from '../log.js';

/**
 * LISTEN on a channel, the one place that holds a notification connection: a dedicated PostgreSQL connection outside
 * the service's pool (LISTEN holds it for the life of the process), reconnected after a loss; on PGlite its in-process
 * listen (one connection, the writer's too, so a commit in this process notifies it directly).
 */
export interface ListenOptions {
  logger: Logger;
  /** Called with true once LISTEN holds, and false when the connection is lost (then reconnected). */
  onListening?: (listening: boolean) => void;
  /** Wait before reconnecting after a loss (default 2 s). */
  retryMs?: number;
}

export type Unlisten = () => Promise<void>;

type PostgresConfig = Extract<DatabaseConfig, { kind: 'postgres' }>;

/** The driver's connection options from the DATABASE_* settings (shared with the pool and the leadership lock). */
export function pgConnection(config: PostgresConfig) {
  const { host, port, database, user, password, ssl } = config;
  return {
    host,
    port,
    database,
    user,
    password,
    ssl: ssl
      ? { rejectUnauthorized: ssl.rejectUnauthorized, ...(ssl.caPath ? { ca: readFileSync(ssl.caPath, 'utf8') } : {}) }
      : undefined,
  };
}

/** Channel names are identifiers we write in code; quoting keeps mixed case and digits as they are. */
const quoted = (channel: string) => `"${channel.replace(/"/g, '""')}"`;

export function listenPostgres(
  config: PostgresConfig,
  channel: string,
  onPayload: (payload: string) => void,
  options: ListenOptions,
): Unlisten {
  const { logger, onListening, retryMs = 2_000 } = options;
  let stopped = false;
  let conn: { end(): Promise<void> } | undefined;
  let timer: NodeJS.Timeout | undefined;
  const retry = () => {
    if (stopped) return;
    timer = setTimeout(() => void connect(), retryMs);
    timer.unref();
  };
  const connect = async () => {
    if (stopped) return;
    // Loaded when first used: a process on PGlite never loads the driver.
    const { default: pg } = await import('pg');
    const c = new pg.Client(pgConnection(config));
    conn = c;
    let lostOnce = false;
    const lost = (err?: Error) => {
      if (lostOnce) return;
      lostOnce = true;
      if (conn === c) conn = undefined;
      void c.end().catch(() => undefined);
      if (stopped) return; // our own end at unlisten
      onListening?.(false);
      logger.warn({ channel, err: err?.message }, 'database notification connection lost; reconnecting');
      retry();
    };
    c.on('notification', (msg) => {
      if (msg.channel === channel && msg.payload !== undefined) onPayload(msg.payload);
    });
    c.on('error', lost);
    c.on('end', () => lost());
    try {
      await c.connect();
      await c.query(`LISTEN ${quoted(channel)}`);
      if (stopped) {
        await c.end();
        return;
      }
      onListening?.(true);
    } catch (err) {
      lost(err as Error);
    }
  };
  void connect();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    const c = conn;
    conn = undefined;
    await c?.end().catch(() => undefined);
  };
}
