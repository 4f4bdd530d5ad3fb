import { AbiCoder } from 'ethers';
import { ERC1155Interface, ERC20Interface } from '../../generated/contracts/abi/index.js';
import { RpcError } from '../common/errors.js';
import type { AssetChange, CallObject } from '../../generated/rpc/methods.js';
import type { RpcContext } from './context.js';
import { quantity, type CallScope } from './types.js';
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
type Log = NonNullable<Frame['logs']>[number];

// ERC-721 Transfer has the ERC-20 signature (tokenId indexed instead of value in data): one topic for both.
const TRANSFER = ERC20Interface.getEvent('Transfer')!.topicHash;
const TRANSFER_SINGLE = ERC1155Interface.getEvent('TransferSingle')!.topicHash;
const TRANSFER_BATCH = ERC1155Interface.getEvent('TransferBatch')!.topicHash;
const ZERO = `0x${'0'.repeat(40)}`;
const ORDER = { native: 0, erc20: 1, erc721: 2, erc1155: 3 } as const;
type AssetType = keyof typeof ORDER;

const topicAddress = (t: string) => `0x${t.slice(26)}`.toLowerCase();
const abi = AbiCoder.defaultAbiCoder();

type Asset = { assetType: AssetType; token: string | null; tokenId: bigint | null };
const NATIVE: Asset = { assetType: 'native', token: null, tokenId: null };

/** The sums per address and asset (0x0 left out). */
class Deltas {
  private readonly byKey = new Map<string, Asset & { address: string; delta: bigint }>();

  move(asset: Asset, from: string, to: string, amount: bigint): void {
    this.add(asset, from, -amount);
    this.add(asset, to, amount);
  }

  private add(asset: Asset, address: string, amount: bigint): void {
    const a = address.toLowerCase();
    if (a === ZERO || amount === 0n) return;
    const key = `${a}|${asset.assetType}|${asset.token ?? ''}|${asset.tokenId ?? ''}`;
    const entry = this.byKey.get(key) ?? { ...asset, address: a, delta: 0n };
    entry.delta += amount;
    this.byKey.set(key, entry);
  }

  /** The deltas that are not zero, by address, asset type, token and token id. */
  changes(): AssetChange[] {
    return [...this.byKey.values()]
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
        tokenId: d.tokenId === null ? null : quantity(d.tokenId),
        delta: d.delta.toString(),
      }));
  }
}

function visit(f: Frame, deltas: Deltas): void {
  if (f.error) return;
  const kind = f.type.toUpperCase();
  const value = BigInt(f.value ?? '0x0');
  if (value > 0n && f.to && kind !== 'DELEGATECALL' && kind !== 'CALLCODE' && kind !== 'STATICCALL')
    deltas.move(NATIVE, f.from, f.to, value);
  for (const log of f.logs ?? []) logTransfers(log, deltas);
  for (const c of f.calls ?? []) visit(c, deltas);
}

/** What a Transfer (ERC-20 and ERC-721), TransferSingle or TransferBatch (ERC-1155) log moved. */
function logTransfers({ address, topics, data }: Log, deltas: Deltas): void {
  const token = address.toLowerCase();
  const [t0, t1, t2, t3] = topics;
  if (t0 === TRANSFER && t1 && t2) {
    const [from, to] = [topicAddress(t1), topicAddress(t2)];
    if (t3 !== undefined) deltas.move({ assetType: 'erc721', token, tokenId: BigInt(t3) }, from, to, 1n);
    else if (data.length === 66) deltas.move({ assetType: 'erc20', token, tokenId: null }, from, to, BigInt(data));
  } else if (t0 === TRANSFER_SINGLE && t2 && t3) {
    const [tokenId, amount] = abi.decode(['uint256', 'uint256'], data) as unknown as [bigint, bigint];
    deltas.move({ assetType: 'erc1155', token, tokenId }, topicAddress(t2), topicAddress(t3), amount);
  } else if (t0 === TRANSFER_BATCH && t2 && t3) {
    const [ids, amounts] = abi.decode(['uint256[]', 'uint256[]'], data) as unknown as [bigint[], bigint[]];
    ids.forEach((tokenId, i) =>
      deltas.move({ assetType: 'erc1155', token, tokenId }, topicAddress(t2), topicAddress(t3), amounts[i]!),
    );
  }
}

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
  const deltas = new Deltas();
  visit(top, deltas);
  return { changes: deltas.changes() };
}
