import { makeError, type JsonRpcProvider } from 'ethers';

/** Calls per JSON-RPC batch request: public nodes commonly cap batches near 100. */
export const MAX_CALLS_PER_BATCH = 100;

export interface ViewCall {
  to: string;
  data: string;
}

/**
 * `eth_call`s at `latest` sent as JSON-RPC batches (MAX_CALLS_PER_BATCH per request, the requests at once)
 * over the provider's own connection: a tick's status checks of many messages cost one request per hundred
 * instead of one each (issue 12: no avoidable round trips). Each call settles on its own: an error answer
 * rejects that call only. A node that does not answer a batch as a batch (no array, ids missing) gets the
 * calls of that request one by one, so nothing depends on batch support.
 */
export async function batchViewCalls(
  provider: JsonRpcProvider,
  calls: readonly ViewCall[],
): Promise<PromiseSettledResult<string>[]> {
  const out: Promise<PromiseSettledResult<string>[]>[] = [];
  for (let at = 0; at < calls.length; at += MAX_CALLS_PER_BATCH)
    out.push(sendBatch(provider, calls.slice(at, at + MAX_CALLS_PER_BATCH)));
  return (await Promise.all(out)).flat();
}

async function sendBatch(
  provider: JsonRpcProvider,
  calls: readonly ViewCall[],
): Promise<PromiseSettledResult<string>[]> {
  if (calls.length === 1) return Promise.allSettled([provider.call(calls[0]!)]);
  const payload = calls.map((c, i) => ({
    jsonrpc: '2.0' as const,
    id: i + 1,
    method: 'eth_call',
    params: [{ to: c.to, data: c.data }, 'latest'],
  }));
  // The same debug event the provider emits for its own requests: per-method call counts stay complete.
  void provider.emit('debug', { action: 'sendRpcPayload', payload });
  let answers: unknown;
  try {
    answers = await provider._send(payload);
  } catch (err) {
    void provider.emit('debug', { action: 'receiveRpcError', error: err });
    return calls.map(() => ({ status: 'rejected', reason: err }));
  }
  type Answer = { id?: unknown; result?: unknown; error?: { code: number; message: string; data?: unknown } };
  const byId = new Map<unknown, Answer>();
  if (Array.isArray(answers)) for (const a of answers as Answer[]) if (a && typeof a === 'object') byId.set(a.id, a);
  if (payload.some((p) => !byId.has(p.id))) return Promise.allSettled(calls.map((c) => provider.call(c)));
  return payload.map((p, i) => {
    const a = byId.get(p.id)!;
    if (a.error) return { status: 'rejected', reason: provider.getRpcError(p, { id: p.id, error: a.error }) };
    if (typeof a.result !== 'string')
      return {
        status: 'rejected',
        reason: makeError(`eth_call to ${calls[i]!.to} answered a non-string result`, 'BAD_DATA', { value: a.result }),
      };
    return { status: 'fulfilled', value: a.result };
  });
}
