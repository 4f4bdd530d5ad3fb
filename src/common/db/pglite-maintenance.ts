import type { Knex } from 'knex';

/**
 * Embedded PGlite runs no background processes: no checkpointer and no autovacuum. Without them its write-ahead log is
 * never recycled (measured: pg_wal grew 49 → 161 MB over 500,000 row updates and kept growing; with a CHECKPOINT after
 * every 100,000 it stayed at 49 MB), the space of deleted rows is never reused, and the planner never gets statistics.
 * On disk that fills the disk of a long-running relayer; in memory (`l2stack dev`) it grows the process. So the client
 * does what those processes would: CHECKPOINT every `intervalMs`, and VACUUM ANALYZE every VACUUM_EVERY-th time.
 */
export interface PgliteMaintenance {
  stop(): Promise<void>;
}

export const PGLITE_CHECKPOINT_MS = 60_000;
const VACUUM_EVERY = 10;

export function startPgliteMaintenance(knex: Knex, intervalMs = PGLITE_CHECKPOINT_MS): PgliteMaintenance {
  let ticks = 0;
  let running: Promise<void> | undefined;
  const tick = async () => {
    ticks++;
    try {
      // Through knex's single connection, so it queues behind (never inside) a running transaction.
      if (ticks % VACUUM_EVERY === 0) await knex.raw('vacuum analyze');
      await knex.raw('checkpoint');
    } catch {
      // The database is closing or busy failing for another reason that its users report; next tick retries.
    }
  };
  const timer = setInterval(() => {
    if (running) return; // a slow VACUUM is not stacked
    running = tick().finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
