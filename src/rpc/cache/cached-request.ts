import type { ResponseBudget } from '../response-budget.js';
import type { UpstreamPool } from '../upstream/pool.js';
import type { RawJson } from '../upstream/raw-json.js';
import type { AnswerCache } from './answer-cache.js';
import type { Awaitable } from '../types.js';
import { answerLifetime, lifetimeOf } from './policy.js';

/**
 * A pass-through read served from the answer cache when the answer cannot have changed (policy.ts),
 * else from the upstream, keeping the answer when it may be kept. An answer fetched while the head moved
 * is not kept at `head` lifetime: it may belong to either head. `fetch`: how a miss asks the node (the
 * compute gate for calls that execute, evm-bounds.ts). A hit is answered now, not through a promise.
 */
export function cachedRequest(
  ctx: { cache: AnswerCache; upstream: UpstreamPool },
  method: string,
  params: readonly unknown[],
  budget: ResponseBudget | undefined,
  fetch: (method: string, params: readonly unknown[]) => Promise<RawJson> = (m, p) =>
    ctx.upstream.requestRaw(m, p, { budget }),
): Awaitable<RawJson> {
  const { cache, upstream } = ctx;
  if (!cache.enabled) return fetch(method, params);
  const tracker = upstream.tracker;
  const decided = lifetimeOf(method, params, tracker, upstream.headIsLive);
  if (decided === undefined) return fetch(method, params);
  const key = `${method}${JSON.stringify(params)}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const version = tracker.version;
  return fetch(method, params).then((answer) => {
    const live = upstream.headIsLive;
    const lifetime = answerLifetime(decided, answer, tracker, live);
    if (lifetime === 'final' || (lifetime === 'head' && live && tracker.version === version))
      cache.set(key, answer, lifetime);
    return answer;
  });
}
