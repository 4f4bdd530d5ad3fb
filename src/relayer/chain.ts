import { Network, type Interface, type JsonRpcProvider } from 'ethers';
import { NativeJsonRpcProvider } from '../common/chain/provider.js';
import type { Registry } from 'prom-client';
import { pooledFetchRequest, pooledRpc } from '../common/chain/pool.js';
import { sleep } from '../common/shutdown.js';
import { counter } from '../common/metrics.js';
import type { Logger } from '../common/log.js';
import { L1MessageServiceInterface, L2MessageServiceInterface } from '../../generated/contracts/abi/index.js';

/**
 * The relayer talks to the message services only through the published ABIs (specs/abi), including the
 * custom errors it recognises in revert data, through the bindings codegen emits from them (Interfaces
 * built once at module load, shared by every message).
 */
export const l1Interface = L1MessageServiceInterface;
export const l2Interface = L2MessageServiceInterface;

export interface Chain {
  name: 'L1' | 'L2';
  provider: JsonRpcProvider;
  chainId: bigint;
  url: string;
  contract: string;
  iface: Interface;
}

const RPC_TIMEOUT_MS = 15_000;

/** JSON-RPC calls the relayer's providers send, by chain and method (what each claim costs the nodes). */
export const rpcCallCounter = (registry: Registry) =>
  counter(registry, 'relayer_rpc_calls_total', 'JSON-RPC calls sent by the relayer pipelines, by chain and method.', [
    'chain',
    'method',
  ]);

/**
 * Connects to a chain: learns its chain id (retrying until it answers or `signal` aborts), then builds a
 * provider with that network fixed, a bounded request timeout, and transport errors counted in metrics.
 */
export async function connectChain(
  options: { name: 'L1' | 'L2'; url: string; contract: string; metrics: Registry; logger: Logger },
  signal: AbortSignal,
): Promise<Chain | undefined> {
  const errors = counter(options.metrics, 'relayer_rpc_errors_total', 'JSON-RPC transport failures by chain.', [
    'chain',
  ]);
  const calls = rpcCallCounter(options.metrics);
  let warned = false;
  let chainId: bigint | undefined;
  while (chainId === undefined) {
    try {
      chainId = BigInt(await pooledRpc<string>(options.url, 'eth_chainId'));
    } catch (err) {
      errors.inc({ chain: options.name });
      if (!warned)
        options.logger.warn(
          { chain: options.name, err: (err as Error).message },
          'RPC endpoint not reachable; retrying',
        );
      warned = true;
      if (!(await sleep(2_000, signal))) return undefined;
    }
  }
  const request = pooledFetchRequest(options.url);
  request.timeout = RPC_TIMEOUT_MS;
  const network = Network.from(chainId);
  const provider = new NativeJsonRpcProvider(request, network, {
    staticNetwork: network,
    cacheTimeout: -1,
    batchMaxCount: 1,
  });
  provider.pollingInterval = 250;
  void provider.on('debug', (info: { action: string; payload?: { method: string } | { method: string }[] }) => {
    if (info.action === 'receiveRpcError') errors.inc({ chain: options.name });
    else if (info.action === 'sendRpcPayload' && info.payload) {
      for (const p of Array.isArray(info.payload) ? info.payload : [info.payload])
        calls.inc({ chain: options.name, method: p.method });
    }
  });
  return {
    name: options.name,
    provider,
    chainId,
    url: options.url,
    contract: options.contract,
    iface: options.name === 'L1' ? l1Interface : l2Interface,
  };
}

/** Revert data of a failed call/estimate, when the node returned any. */
export function revertData(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e; i++) {
    const data = (e as { data?: unknown }).data;
    if (typeof data === 'string' && data.startsWith('0x')) return data;
    const info = (e as { info?: { error?: { data?: unknown } } }).info?.error?.data;
    if (typeof info === 'string' && info.startsWith('0x')) return info;
    e = (e as { error?: unknown; cause?: unknown }).error ?? (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Whether the error is an execution revert (as opposed to a transport or node failure). */
export function isRevert(err: unknown): boolean {
  const e = err as { code?: string; shortMessage?: string; message?: string };
  return (
    e?.code === 'CALL_EXCEPTION' || revertData(err) !== undefined || /revert/i.test(e?.shortMessage ?? e?.message ?? '')
  );
}

/** A readable name for revert data: the custom error with its arguments, or the raw selector. */
export function describeRevert(iface: Interface, err: unknown): string {
  const data = revertData(err);
  if (!data || data === '0x')
    return `execution reverted${(err as { reason?: string }).reason ? `: ${(err as { reason: string }).reason}` : ''}`;
  try {
    const parsed = iface.parseError(data);
    if (parsed) return `${parsed.name}(${parsed.args.map((a) => String(a)).join(', ')})`;
  } catch {
    // unknown error selector
  }
  if (data.startsWith('0x08c379a0')) {
    try {
      // ethers knows the built-in Error(string) on every Interface; no fragment (or Interface) per message.
      return `Error(${String(iface.decodeErrorResult('Error', data)[0])})`;
    } catch {
      // malformed
    }
  }
  return `execution reverted with data ${data.slice(0, 74)}`;
}
