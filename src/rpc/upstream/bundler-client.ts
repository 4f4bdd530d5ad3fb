import { RpcError } from '../../common/errors.js';
import type { RpcMethodName } from '../../../generated/rpc/methods.js';
import { RpcCodes, UpstreamTransportError } from '../errors.js';
import type { MethodParams, MethodResult } from '../types.js';
import { JsonRpcHttpClient } from './client.js';

/**
 * The ERC-4337 bundler behind the endpoint (RPC_BUNDLER_URL). Methods are forwarded with the same params;
 * the neutral vendor_ prefix becomes the bundler vendor's (RPC_BUNDLER_VENDOR_PREFIX, e.g. pimlico_ for
 * Alto, the bundler `l2stack dev` runs), so another vendor's bundler needs a variable, not code. A bundler
 * that cannot be reached (refused, timed out, answering something that is not JSON-RPC) is -32002 naming
 * the bundler; its own JSON-RPC errors (AA codes of ERC-4337 validation) pass through with code and data.
 */
export class BundlerClient {
  private readonly client: JsonRpcHttpClient;

  constructor(
    url: string,
    private readonly vendorPrefix: string,
    timeoutMs: number,
  ) {
    this.client = new JsonRpcHttpClient(url, timeoutMs);
  }

  /** The method name as the bundler knows it. */
  rename(method: string): string {
    return method.startsWith('vendor_') ? `${this.vendorPrefix}${method.slice('vendor_'.length)}` : method;
  }

  /**
   * The bundler's answer, typed as the spec's result: the bundler is trusted to answer ERC-4337's shapes, as the node
   * is for standard methods.
   */
  async forward<N extends RpcMethodName>(method: N, params: MethodParams<N>): Promise<MethodResult<N>> {
    let response;
    try {
      response = await this.client.call(this.rename(method), params, { batch: false });
    } catch (err) {
      // The caller learns which service is missing and why, never the bundler's address.
      if (err instanceof UpstreamTransportError)
        throw new RpcError(
          RpcCodes.ResourceUnavailable,
          `the ERC-4337 bundler is not available: ${err.message.replace(/^upstream /, '')}`,
        );
      throw err;
    }
    if (response.error) {
      // Alto answers an exception of its own (not a validation result) as an error without a code: it is still
      // the bundler's failure, so the caller gets -32603 with its message rather than an invalid error object.
      const { code, message, data } = response.error as { code?: unknown; message?: unknown; data?: unknown };
      if (typeof code !== 'number' || !Number.isInteger(code))
        throw new RpcError(RpcCodes.Internal, `the ERC-4337 bundler failed: ${String(message)}`, data);
      throw new RpcError(code, String(message), data);
    }
    return (response.raw?.value ?? null) as MethodResult<N>;
  }

  close(): void {
    this.client.close();
  }
}
