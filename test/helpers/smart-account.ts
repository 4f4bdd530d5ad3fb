import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  type Chain,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { entryPoint07Abi, formatUserOperationRequest, type UserOperation } from 'viem/account-abstraction';
import solc from 'solc';
import { toSimpleSmartAccount } from 'permissionless/accounts';
import { createSmartAccountClient } from 'permissionless';
import type { DevnetState } from '../../src/devnet/state-file.js';
import { DEVNET_BLOCK_TIME_MS } from '../../src/devnet/devnet.js';

/**
 * The SDKs as integrators use them: permissionless 0.2.57 (toSimpleSmartAccount, createSmartAccountClient) on
 * viem 2.57.20, and ethers 6.17.0; the flows assert these are the installed versions, so a move of one says so.
 */
export const SDK_VERSIONS = { permissionless: '0.2.57', viem: '2.57.20', ethers: '6.17.0' } as const;

/** The version of the installed package `name` (its package.json, found above its entry point). */
export function installedVersion(name: keyof typeof SDK_VERSIONS): string {
  const entry = createRequire(import.meta.url).resolve(name);
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version: string };
      if (pkg.name === name) return pkg.version;
    } catch {
      // no package.json at this level
    }
  }
  throw new Error(`no package.json found for ${name}`);
}

/**
 * The devnet's L2 as a viem chain, with its block time as an integrator declares it: viem polls (a receipt, a user
 * operation's receipt) every half block time, and without one it assumes 12 s blocks and polls every 4 s (the
 * permissionless file's tests took 38-40 s for it, now 10-11 s).
 */
export function devnetChain(state: DevnetState): Chain {
  const url = state.l2.upstreamRpcUrl;
  return defineChain({
    id: state.l2.chainId,
    name: 'l2stack devnet L2',
    blockTime: DEVNET_BLOCK_TIME_MS,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  });
}

/** A node client straight to the devnet's L2 (anvil). */
export const nodeClient = (state: DevnetState): PublicClient =>
  createPublicClient({ chain: devnetChain(state), transport: http(state.l2.upstreamRpcUrl) });

/** The SimpleAccount (EntryPoint v0.7, the devnet's SimpleAccountFactory) owned by devnet accounts[index]. */
export function simpleAccount(state: DevnetState, index: number) {
  return toSimpleSmartAccount({
    client: nodeClient(state),
    owner: privateKeyToAccount(state.accounts[index]!.privateKey as Hex),
    entryPoint: { address: state.entryPoint! as Hex, version: '0.7' },
    factoryAddress: state.accountFactory! as Hex,
  });
}

export type SimpleAccount = Awaited<ReturnType<typeof simpleAccount>>;

/**
 * A smart account client with `bundlerUrl` as its bundler transport. Our endpoint answers the node's methods
 * too, so the SDK needs nothing else; a bare bundler (Alto) serves no eth_getBlockByNumber, so straight to it
 * the SDK reads fees from the node (`client`), as an integrator of a bare bundler sets it up.
 */
export function smartAccountClient(
  state: DevnetState,
  account: SimpleAccount,
  bundlerUrl: string,
  bundlerIsBare: boolean,
  paymaster?: Hex,
) {
  // The test paymaster signs nothing: its data is empty, it returns no context (so no postOp: 0 gas for it), and the
  // bundler's estimate gives its verification gas.
  const sponsor = paymaster
    ? {
        paymaster: {
          getPaymasterStubData: async () => ({ paymaster, paymasterData: '0x' as Hex, paymasterPostOpGasLimit: 0n }),
          getPaymasterData: async () => ({ paymaster, paymasterData: '0x' as Hex }),
        },
      }
    : {};
  return createSmartAccountClient({
    account,
    chain: devnetChain(state),
    bundlerTransport: http(bundlerUrl),
    ...(bundlerIsBare ? { client: nodeClient(state) } : {}),
    ...sponsor,
  });
}

/** A test paymaster for EntryPoint v0.7 that sponsors every operation (the devnet deploys none). */
const PAYMASTER_SOURCE = `
// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;
struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }
contract AcceptAllPaymaster {
  address public immutable entryPoint;
  constructor(address ep) { entryPoint = ep; }
  function validatePaymasterUserOp(PackedUserOperation calldata, bytes32, uint256) external view returns (bytes memory context, uint256 validationData) {
    require(msg.sender == entryPoint, "only the EntryPoint");
    return ("", 0);
  }
  function postOp(uint8, bytes calldata, uint256, uint256) external {}
}
`;

/** Deploys the sponsoring paymaster from devnet accounts[0] and deposits `deposit` wei for it at the EntryPoint. */
export async function deployPaymaster(state: DevnetState, deposit: bigint): Promise<Hex> {
  const input = {
    language: 'Solidity',
    sources: { 'p.sol': { content: PAYMASTER_SOURCE } },
    settings: { evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const artifact = out.contracts['p.sol']!.AcceptAllPaymaster!;
  const wallet = createWalletClient({
    chain: devnetChain(state),
    transport: http(state.l2.upstreamRpcUrl),
    account: privateKeyToAccount(state.accounts[0]!.privateKey as Hex),
  });
  const node = nodeClient(state);
  const deployed = await node.waitForTransactionReceipt({
    hash: await wallet.deployContract({
      abi: artifact.abi,
      bytecode: `0x${artifact.evm.bytecode.object}`,
      args: [state.entryPoint],
    }),
    timeout: 60_000,
  });
  const paymaster = deployed.contractAddress!;
  const hash = await wallet.writeContract({
    address: state.entryPoint! as Hex,
    abi: entryPoint07Abi,
    functionName: 'depositTo',
    args: [paymaster],
    value: deposit,
  });
  await node.waitForTransactionReceipt({ hash, timeout: 60_000 });
  return paymaster;
}

/** Sends `wei` from devnet accounts[0] to `to` and waits for its receipt. */
export async function fund(state: DevnetState, to: Hex, wei: bigint): Promise<void> {
  const chain = devnetChain(state);
  const wallet = createWalletClient({
    chain,
    transport: http(state.l2.upstreamRpcUrl),
    account: privateKeyToAccount(state.accounts[0]!.privateKey as Hex),
  });
  const hash = await wallet.sendTransaction({ to, value: wei });
  await nodeClient(state).waitForTransactionReceipt({ hash, timeout: 60_000 });
}

/** An operation in JSON-RPC form (hex quantities), as the SDK puts it on the wire. */
export const wire = (op: UserOperation<'0.7'>) => formatUserOperationRequest(op) as unknown as Record<string, unknown>;
