import type { DirectionContext } from './context.js';

/** Stuck messages logged per iteration at most (the gauge counts them all). */
const LOG_LIMIT = 100;

/**
 * Logs each message that has been claimable on its destination for longer than RELAYER_STUCK_AFTER_SECONDS
 * without being claimed, once per time it gets stuck (the gauge relayer_messages_stuck counts them at scrape
 * time, on any instance). Run by the instance leading the direction, so an HA pair logs each once.
 */
export function createStuckWatcher(ctx: DirectionContext, stuckAfterSeconds: number) {
  const logged = new Set<string>();
  return async function tick(): Promise<boolean> {
    const { oldest } = await ctx.repo.stuck(stuckAfterSeconds, LOG_LIMIT, ctx.direction);
    const now = new Set(oldest.map((m) => String(m.id)));
    for (const m of oldest) {
      const id = String(m.id);
      if (logged.has(id)) continue;
      logged.add(id);
      const since = m.anchored_at ? Math.round((Date.now() - new Date(m.anchored_at).getTime()) / 1000) : undefined;
      ctx.logger.warn(
        { message: m.message_hash, direction: m.direction, status: m.status, claimableForSeconds: since },
        `message ${m.message_hash} is stuck: claimable on ${ctx.destination.name} for ${since ?? '?'} s (RELAYER_STUCK_AFTER_SECONDS ${stuckAfterSeconds}) and still ${m.status}`,
      );
    }
    // A message no longer stuck may be logged again if it gets stuck again; past the limit the set is kept.
    if (oldest.length < LOG_LIMIT) for (const id of logged) if (!now.has(id)) logged.delete(id);
    return false;
  };
}
