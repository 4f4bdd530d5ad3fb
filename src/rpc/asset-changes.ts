import { AbiCoder } from 'ethers';
import { ERC1155Interface, ERC20Interface } from '../../generated/contracts/abi/index.js';
import { RpcError } from '../common/errors.js';
import type { AssetChange, CallObject } from '../../generated/rpc/methods.js';
import type { RpcContext } from './context.js';
import type { CallScope } from './types.js';
import { computeResult } from './evm-bounds.js';
import { RpcCodes } from './errors.js';

interface Frame {
  type: string;
  from: string;
  to?: string;
  value?: string;
  output?: string;
  error?: string;
  revertReason?: string;
  calls?: Frame[];
  logs?: { address: string; topics: string[]; data: string }[];
}

// ERC-721 Transfer has the ERC-20 signature (tokenId indexed instead of value in data): one topic for both.
const TRANSFER = ERC20Interface.getEvent('Transfer')!.topicHash;
const TRANSFER_SINGLE = ERC1155Interface.getEvent('TransferSingle')!.topicHash;
const TRANSFER_BATCH = ERC1155Interface.getEvent('TransferBatch')!.topicHash;
const ZERO = `0x${'0'.repeat(40)}`;
const ORDER = { native: 0, erc20: 1, erc721: 2, erc1155: 3 } as const;
type AssetType = keyof typeof ORDER;

const topicAddress = (t: string) => `0x${t.slice(26)}`.toLowerCase();

/**
 * vendor_simulateAssetChanges: simulates the call with debug_traceCall (callTracer, withLog) and sums,
 * per address and asset, the value moved by successful frames and the Transfer (ERC-20 and ERC-721),
 * TransferSingle and TransferBatch (ERC-1155) logs they emitted. Failed frames and everything under them
 * were rolled back and count for nothing; mints and burns count for the holder only (not for 0x0).
 */
export async function simulateAssetChanges(
  ctx: RpcContext,
  call: CallObject,
  block: string | undefined,
  scope: CallScope = {},
): Promise<{ changes: AssetChange[] }> {
  // Gas bounded by RPC_GAS_CAP and time by RPC_EVM_TIMEOUT_MS, as debug_traceCall itself (evm-bounds.ts).
  const tracer = { tracer: 'callTracer', tracerConfig: { withLog: true } } as const;
  const top = (await computeResult(ctx, 'debug_traceCall', [call, block ?? 'latest', tracer], scope)) as Frame;
  if (top.error) {
    throw new RpcError(
      RpcCodes.ExecutionReverted,
      `execution reverted${top.revertReason ? `: ${top.revertReason}` : ''}`,
      top.output ?? '0x',
    );
  }
  const deltas = new Map<
    string,
    { address: string; assetType: AssetType; token: string | null; tokenId: bigint | null; delta: bigint }
  >();
  const add = (address: string, assetType: AssetType, token: string | null, tokenId: bigint | null, amount: bigint) => {
    const a = address.toLowerCase();
    if (a === ZERO || amount === 0n) return;
    const key = `${a}|${assetType}|${token ?? ''}|${tokenId ?? ''}`;
    const entry = deltas.get(key) ?? { address: a, assetType, token, tokenId, delta: 0n };
    entry.delta += amount;
    deltas.set(key, entry);
  };
  const visit = (f: Frame) => {
    if (f.error) return;
    const kind = f.type.toUpperCase();
    const value = BigInt(f.value ?? '0x0');
    if (value > 0n && f.to && kind !== 'DELEGATECALL' && kind !== 'CALLCODE' && kind !== 'STATICCALL') {
      add(f.from, 'native', null, null, -value);
      add(f.to, 'native', null, null, value);
    }
    for (const log of f.logs ?? []) {
      const token = log.address.toLowerCase();
      const [t0, t1, t2, t3] = log.topics;
      if (t0 === TRANSFER && t1 && t2) {
        if (t3 !== undefined) {
          add(topicAddress(t1), 'erc721', token, BigInt(t3), -1n);
          add(topicAddress(t2), 'erc721', token, BigInt(t3), 1n);
        } else if (log.data.length === 66) {
          const amount = BigInt(log.data);
          add(topicAddress(t1), 'erc20', token, null, -amount);
          add(topicAddress(t2), 'erc20', token, null, amount);
        }
      } else if (t0 === TRANSFER_SINGLE && t2 && t3) {
        const [tokenId, amount] = AbiCoder.defaultAbiCoder().decode(['uint256', 'uint256'], log.data) as unknown as [
          bigint,
          bigint,
        ];
        add(topicAddress(t2), 'erc1155', token, tokenId, -amount);
        add(topicAddress(t3), 'erc1155', token, tokenId, amount);
      } else if (t0 === TRANSFER_BATCH && t2 && t3) {
        const [ids, amounts] = AbiCoder.defaultAbiCoder().decode(['uint256[]', 'uint256[]'], log.data) as unknown as [
          bigint[],
          bigint[],
        ];
        ids.forEach((tokenId, i) => {
          add(topicAddress(t2), 'erc1155', token, tokenId, -amounts[i]!);
          add(topicAddress(t3), 'erc1155', token, tokenId, amounts[i]!);
        });
      }
    }
    for (const c of f.calls ?? []) visit(c);
  };
  visit(top);
  const changes = [...deltas.values()]
    .filter((d) => d.delta !== 0n)
    .sort(
      (a, b) =>
        a.address.localeCompare(b.address) ||
        ORDER[a.assetType] - ORDER[b.assetType] ||
        (a.token ?? '').localeCompare(b.token ?? '') ||
        Number((a.tokenId ?? 0n) - (b.tokenId ?? 0n) > 0n) - Number((a.tokenId ?? 0n) - (b.tokenId ?? 0n) < 0n),
    )
    .map((d) => ({
      address: d.address,
      assetType: d.assetType,
      token: d.token,
      tokenId: d.tokenId === null ? null : `0x${d.tokenId.toString(16)}`,
      delta: d.delta.toString(),
    }));
  return { changes };
}
