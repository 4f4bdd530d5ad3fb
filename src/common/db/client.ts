import knexFactory, { type Knex } from 'knex';
import { PGLITE_MEMORY, PGLITE_SHARED_BUFFERS_MB, describeDatabase, type DatabaseConfig } from './config.js';
import { lockPgliteDir } from './pglite-lock.js';
import { startPgliteMaintenance } from './pglite-maintenance.js';
import { dropTemplate, pgliteStart, saveTemplate } from './pglite-template.js';
import { createQueries, type Queries } from './queries.js';
import { listenPostgres, pgConnection, type ListenOptions, type Unlisten } from './listen.js';
import { createLogger, type Logger } from '../log.js';

export type { Knex };

/** OIDs of the types that must come back as strings on both drivers (pg already does this). */
const INT8_OID = 20;
const NUMERIC_OID = 1700;

export interface DbClient extends Queries {
  kind: DatabaseConfig['kind'];
  config: DatabaseConfig;
  /**
   * The driver, for migrations and the query wrapper only: code outside src/common/db goes through query/transaction
   * (lint holds it).
   */
  knex: Knex;
  /** What was opened, for logs: "PostgreSQL host:port/db", "embedded PGlite in memory" or "… in DIR". */
  description: string;
  close(): Promise<void>;
  /** Notifications on `channel` (listen.ts): a dedicated connection on PostgreSQL, in-process on PGlite. */
  listen(channel: string, onPayload: (payload: string) => void, options: ListenOptions): Promise<Unlisten>;
}

/**
 * knex's own log (by default knex prints to the console: plain text with stacks, which breaks "logs are JSON lines")
 * through our logger. "Acquire connection error" comes once per failed connection attempt with a stack, hundreds of
 * lines in an outage; the caller gets the classified error and logs it itself, so knex's copy is debug, one line.
 */
function knexLog(logger: Logger): NonNullable<Knex.Config['log']> {
  const text = (m: unknown) => (typeof m === 'string' ? m : m instanceof Error ? m.message : JSON.stringify(m));
  return {
    warn: (m: unknown) => {
      const t = text(m);
      if (t.startsWith('Acquire connection error') || t.startsWith('Connection Error'))
        logger.debug({ knex: t.split('\n')[0] }, 'database connection attempt failed');
      else logger.warn({ knex: t }, 'knex warning');
    },
    error: (m: unknown) => logger.error({ knex: text(m) }, 'knex error'),
    deprecate: (method: unknown, alternative: unknown) =>
      logger.warn({ knex: `${text(method)} is deprecated, use ${text(alternative)}` }, 'knex deprecation'),
    debug: (m: unknown) => logger.debug({ knex: text(m) }, 'knex debug'),
  };
}

type DbClientOptions = { poolMax?: number; pgliteDefault?: string; pgliteCheckpointMs?: number; logger?: Logger };

/** What each driver opens; `close` also releases what the driver holds beyond the pool. */
type Opened = Pick<DbClient, 'knex' | 'listen' | 'close'>;

async function openPglite(
  config: Extract<DatabaseConfig, { kind: 'pglite' }>,
  options: DbClientOptions,
  log: Knex.Config['log'],
): Promise<Opened> {
  const dataDir = config.dataDir ?? options.pgliteDefault ?? PGLITE_MEMORY;
  // Before PGlite touches the files: a second process on them would corrupt the database.
  const unlock = dataDir === PGLITE_MEMORY ? () => {} : lockPgliteDir(dataDir);
  try {
    const [{ PGlite }, { default: ClientPgLite }] = await Promise.all([
      import('@electric-sql/pglite'),
      import('knex-pglite'),
    ]);
    // Options object form: `new PGlite(undefined, options)` silently ignores the options.
    const start = pgliteStart(dataDir);
    const pglite = new PGlite({
      dataDir,
      loadDataDir: start.loadDataDir,
      startParams: [
        ...PGlite.defaultStartParams,
        '-c',
        `shared_buffers=${config.sharedBuffersMb ?? PGLITE_SHARED_BUFFERS_MB}MB`,
      ],
      parsers: { [INT8_OID]: (v: string) => v, [NUMERIC_OID]: (v: string) => v },
    });
    await pglite.waitReady.catch((err: unknown) => {
      start.unpacked?.();
      if (start.loadDataDir || start.unpacked) dropTemplate();
      throw err;
    });
    start.relock?.();
    if (start.saveTo) await saveTemplate(pglite, start.saveTo);
    const knex = knexFactory({
      client: ClientPgLite as unknown as typeof Knex.Client,
      dialect: 'postgres',
      connection: () => ({ pglite }),
      log,
    } as Knex.Config);
    const maintenance = startPgliteMaintenance(knex, options.pgliteCheckpointMs);
    const listen: DbClient['listen'] = async (channel, onPayload, { onListening }) => {
      const unlisten = await pglite.listen(channel, onPayload);
      onListening?.(true);
      return unlisten;
    };
    const close = async () => {
      try {
        await maintenance.stop();
        await knex.destroy();
      } finally {
        unlock();
      }
    };
    return { knex, listen, close };
  } catch (err) {
    unlock();
    throw err;
  }
}

function openPostgres(
  config: Extract<DatabaseConfig, { kind: 'postgres' }>,
  options: DbClientOptions,
  log: Knex.Config['log'],
): Opened {
  const knex = knexFactory({
    client: 'pg',
    connection: pgConnection(config),
    pool: { min: 0, max: options.poolMax ?? 10 },
    acquireConnectionTimeout: 10_000,
    log,
  });
  return {
    knex,
    listen: (channel, onPayload, listenOptions) =>
      Promise.resolve(listenPostgres(config, channel, onPayload, listenOptions)),
    close: () => knex.destroy(),
  };
}

/**
 * Opens the process's one connection pool. PGlite is single-connection, so everything in one process
 * (several services under `l2stack dev`) shares one client; do not await a query outside a transaction
 * while holding that transaction on PGlite, it would wait on itself.
 *
 * `pgliteDefault`: where PGlite lives when the config names no directory (DATABASE_PGLITE_DIR unset): a
 * service command passes its `defaultPgliteDir`; anything else (tests, tools) stays in memory. A PGlite
 * directory is locked for this process until `close` (DatabaseLockedError while another process has it).
 */
export async function createDbClient(config: DatabaseConfig, options: DbClientOptions = {}): Promise<DbClient> {
  // Callers without a logger (tools, tests) still get JSON lines, warnings and errors only.
  const log = knexLog((options.logger ?? createLogger({ level: 'warn' })).child({ module: 'db' }));
  const { knex, listen, close } =
    config.kind === 'pglite' ? await openPglite(config, options, log) : openPostgres(config, options, log);
  return {
    kind: config.kind,
    config,
    knex,
    description: describeDatabase(config, options.pgliteDefault),
    close,
    listen,
    ...createQueries(knex),
  };
}
