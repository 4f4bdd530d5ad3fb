import { pooledRpc } from '../common/chain/pool.js';

/**
 * The ingest's JSON-RPC calls (block headers and prestate traces) over the process's bounded node pool
 * (src/common/chain/pool.ts): keep-alive sockets, the body decoded by Buffer's native UTF-8 decoder and JSON.parse.
 * Through ethers' provider the traces, the largest answers the state manager reads, went through its JavaScript UTF-8
 * decoder, which under `l2stack dev` competed for the one thread every service of the process shares. Nothing to close:
 * the pool is the process's, and its idle sockets close on their own after 5 s.
 */
export interface JsonRpcCaller {
  call<T>(method: string, params: unknown[]): Promise<T>;
}

export function createJsonRpcCaller(url: string): JsonRpcCaller {
  return { call: <T>(method: string, params: unknown[]) => pooledRpc<T>(url, method, params, 60_000) };
}
