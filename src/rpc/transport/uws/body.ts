import { headClientAddress } from '../../../common/http/client-address.js';
import { ClientQuota } from '../../../common/http/client-quota.js';
import type { RequestHead } from '../../../common/http/request-head.js';
import { errorBody } from '../../envelope.js';
import { RpcCodes } from '../../errors.js';
import type { Exchange } from './reply.js';

/**
 * How much of a body over the limit is read (and dropped) before the 413, so the client is done sending and reads it.
 */
const DRAIN_FACTOR = 8;

/**
 * The body, up to `limit` bytes (undefined when larger: 413), handed to `done` in uWS's last data callback. A
 * larger body is read to its end and dropped when it is at most DRAIN_FACTOR times the limit (a client still
 * sending would see its connection reset instead of the 413); beyond that it is refused at once. A body that
 * does not arrive whole within `timeoutMs` is answered 408 and its connection closed.
 */
export function readBody(
  x: Exchange,
  declaredLength: string | undefined,
  limit: number,
  timeoutMs: number,
  done: (text: string | undefined) => void,
  timedOut: () => void,
): void {
  const declared = declaredLength === undefined ? NaN : Number(declaredLength);
  if (Number.isFinite(declared) && declared > limit * DRAIN_FACTOR) return done(undefined);
  let chunks: Buffer[] | undefined;
  let size = 0;
  let tooLarge = Number.isFinite(declared) && declared > limit;
  let timer: NodeJS.Timeout | undefined;
  x.res.onData((chunk, last) => {
    if (x.aborted) return;
    if (chunks === undefined && last && !tooLarge && chunk.byteLength <= limit) {
      // The whole body in one callback (nearly every call): decoded from uWS's memory, no copy kept.
      return done(Buffer.from(chunk).toString('utf8'));
    }
    chunks ??= [];
    size += chunk.byteLength;
    if (size > limit && !tooLarge) {
      tooLarge = true;
      chunks.length = 0;
    }
    if (tooLarge) {
      if (!last && size <= limit * DRAIN_FACTOR) return void (timer ??= setTimeout(timedOut, timeoutMs));
      clearTimeout(timer);
      return done(undefined);
    }
    // uWS reuses the chunk's memory once this callback returns: keep a copy.
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!last) return void (timer ??= setTimeout(timedOut, timeoutMs));
    clearTimeout(timer);
    done(Buffer.concat(chunks).toString('utf8'));
  });
}

/**
 * uWS has no connection cap, so the bodies one address is sending are bounded by RPC_MAX_INFLIGHT_PER_CLIENT too
 * (counted apart from its calls, which the envelope counts): a trickled 1 MiB body costs its memory until it is
 * whole, and one address cannot keep more than the quota of them. `take` answers the release (once, whatever
 * ends the body), or undefined when the quota is full.
 */
export function bodySlots(
  perClient: number,
  hops: number,
): { take(head: RequestHead): (() => void) | undefined; refusal: string } {
  const quota = new ClientQuota(perClient);
  const none = () => undefined;
  return {
    take(head) {
      if (perClient === 0) return none;
      const client = headClientAddress(head, hops);
      if (!quota.take(client)) return undefined;
      let held = true;
      return () => {
        if (held) quota.release(client);
        held = false;
      };
    },
    refusal: errorBody(
      RpcCodes.LimitExceeded,
      `too many request bodies in flight: at most ${perClient} of one client being received at once (RPC_MAX_INFLIGHT_PER_CLIENT); send them whole, then retry`,
      { cap: 'RPC_MAX_INFLIGHT_PER_CLIENT', limit: perClient, retryAfterSeconds: 1 },
    ),
  };
}
