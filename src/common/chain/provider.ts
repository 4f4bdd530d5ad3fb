import { JsonRpcProvider, Network, makeError, type JsonRpcPayload, type JsonRpcResult } from 'ethers';
import { pooledFetchRequest } from './pool.js';

/**
 * ethers' JsonRpcProvider with the answer decoded by Node (Buffer → string → JSON.parse, all native) instead
 * of ethers' UTF-8 decoder written in JavaScript: that decoder was ~5 % of the relayer's thread in the bench
 * profile (every estimate, call and broadcast answer passes through it). Everything else — the request, the
 * batch handling, error mapping — is ethers' own.
 */
export class NativeJsonRpcProvider extends JsonRpcProvider {
  #chainKnown = false;

  /**
   * A provider made without a chain id learns it before its first call goes out. ethers does that in the background
   * and, while the node does not answer, retries every second for ever, printing a line to stdout each time, with
   * every call waiting: here the first calls ask eth_chainId once (bounded by the request's timeout) and a failure
   * is their own error, so the caller's loop retries and logs it.
   */
  override send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
    if (this.#chainKnown) return super.send(method, params);
    return this._detectNetwork().then(() => {
      this.#chainKnown = true;
      return super.send(method, params);
    });
  }

  // ethers types the answers as JsonRpcResult[] although error answers travel the same way (as in its own _send).
  override async _send(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<JsonRpcResult[]> {
    const request = this._getConnection();
    request.body = JSON.stringify(payload);
    request.setHeader('content-type', 'application/json');
    const response = await request.send();
    response.assertOk();
    const body = response.body;
    let parsed: unknown;
    try {
      parsed = JSON.parse(
        body === null ? '' : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'),
      );
    } catch (err) {
      throw makeError('response body is not valid JSON', 'UNSUPPORTED_OPERATION', {
        operation: 'bodyJson',
        info: { response, error: err },
      });
    }
    return (Array.isArray(parsed) ? parsed : [parsed]) as JsonRpcResult[];
  }
}

/** One call's bound unless the caller gives its own (createProvider's timeoutMs). */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;

/**
 * An ethers provider for a node whose chain id is known: no network auto-detection round trips and no
 * response caching (anvil and our own endpoint answer fast, and cached block numbers cause stale reads).
 * Its connections come from the process's bounded pool (./pool.ts).
 */
export function createProvider(
  url: string,
  chainId?: number,
  options: { pollingInterval?: number; timeoutMs?: number } = {},
): JsonRpcProvider {
  const network = chainId !== undefined ? Network.from(chainId) : undefined;
  const request = pooledFetchRequest(url);
  // ethers' default is 300 s per call: a node that stops answering would hold its caller (a coordinator round,
  // an indexer tick) for five minutes before the caller's own retry could run.
  request.timeout = options.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const provider = new NativeJsonRpcProvider(request, network, {
    staticNetwork: network ?? true,
    cacheTimeout: -1,
    batchMaxCount: 1,
  });
  provider.pollingInterval = options.pollingInterval ?? 250;
  return provider;
}
