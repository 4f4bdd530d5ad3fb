import type { RpcContext } from '../context.js';
import type { ResponseBudget } from '../response-budget.js';
import type { RawJson } from '../upstream/raw-json.js';
import { answerLifetime, lifetimeOf } from './policy.js';

/**
 * A pass-through read served from the answer cache when the answer cannot have changed (policy.ts),
 * else from the upstream, keeping the answer when it may be kept. An answer fetched while the head moved
 * is not kept at `head` lifetime: it may belong to either head.
 */
export async function cachedRequest(ctx: RpcContext, method: string, params: readonly unknown[], budget: ResponseBudget | undefined): Promise<RawJson> {
  const { cache, upstream } = ctx;
  if (!cache.enabled) return upstream.requestRaw(method, params, { budget });
  const tracker = upstream.tracker;
  const decided = lifetimeOf(method, params, tracker, upstream.headIsLive);
  if (decided === undefined) return upstream.requestRaw(method, params, { budget });
  const key = `${method}${JSON.stringify(params)}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const version = tracker.version;
  const answer = await upstream.requestRaw(method, params, { budget });
  const live = upstream.headIsLive;
  const lifetime = answerLifetime(decided, answer, tracker, live);
  if (lifetime === 'final' || (lifetime === 'head' && live && tracker.version === version)) cache.set(key, answer, lifetime);
  return answer;
}
