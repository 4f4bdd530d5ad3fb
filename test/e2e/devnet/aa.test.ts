import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AbiCoder,
  Interface,
  JsonRpcProvider,
  Wallet,
  getBytes,
  parseEther,
  parseUnits,
  toBeHex,
  zeroPadValue,
  type Signer,
} from 'ethers';
import { getUserOperationHash } from 'viem/account-abstraction';
import { startDevnet, type Devnet } from '../../../src/devnet/devnet.js';
import { create2Address } from '../../../src/devnet/account-abstraction/deploy.js';
import { devnetBundlerEnv } from '../../../src/devnet/services/rpc.js';
import {
  EntryPoint__factory,
  SimpleAccountFactory__factory,
  SimpleAccount__factory,
} from '../../../generated/contracts/account-abstraction/types/index.js';
import { TestToken__factory } from '../../../generated/contracts/types/index.js';
import { openTestDb } from '../../helpers/db.js';
import { waitFor } from '../../helpers/chain.js';
import { call, resultValidator, startTestRpc, testCommon, type RpcReply } from '../../rpc/helpers.js';
import { mined } from '../../../src/common/chain/mined.js';

/**
 * ERC-4337 end to end on a devnet of its own (the bundler takes seconds to start, so the shared e2e devnet
 * runs without one): EntryPoint v0.7 and SimpleAccountFactory deployed by the devnet, Alto as the bundler,
 * every call made over HTTP to our endpoint, which forwards to Alto with vendor_ renamed to pimlico_.
 */

type Hex = `0x${string}`;
interface UserOp {
  sender: string;
  nonce: string;
  factory?: string;
  factoryData?: string;
  callData: string;
  callGasLimit: string;
  verificationGasLimit: string;
  preVerificationGas: string;
  maxFeePerGas: string;
  maxPriorityFeePerGas: string;
  signature: string;
}

let devnet: Devnet;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let validate: Awaited<ReturnType<typeof resultValidator>>;
let provider: JsonRpcProvider;
let owner: Wallet;
let sender: string;
let entryPoint: string;
let factory: string;
let token: ReturnType<typeof TestToken__factory.connect>;
const recipient = Wallet.createRandom().address;
const hex = (n: bigint) => `0x${n.toString(16)}`;
const common = testCommon();

/** A JSON-RPC result through our endpoint, checked against the spec's result schema. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function endpoint(method: string, params: unknown[]): Promise<any> {
  const reply = await call(rpc.url, method, params);
  if (reply.error) throw new Error(`${method}: ${JSON.stringify(reply.error)}`);
  expect(validate(method, reply.result), method).toBeUndefined();
  return reply.result;
}

const bundlerDirect = async (method: string, params: unknown[]): Promise<RpcReply> =>
  call(devnet.state.bundler!.url, method, params);

function userOpHash(op: UserOp): Hex {
  return getUserOperationHash({
    chainId: devnet.state.l2.chainId,
    entryPointAddress: entryPoint as Hex,
    entryPointVersion: '0.7',
    userOperation: {
      sender: op.sender as Hex,
      nonce: BigInt(op.nonce),
      factory: op.factory as Hex | undefined,
      factoryData: op.factoryData as Hex | undefined,
      callData: op.callData as Hex,
      callGasLimit: BigInt(op.callGasLimit),
      verificationGasLimit: BigInt(op.verificationGasLimit),
      preVerificationGas: BigInt(op.preVerificationGas),
      maxFeePerGas: BigInt(op.maxFeePerGas),
      maxPriorityFeePerGas: BigInt(op.maxPriorityFeePerGas),
      signature: op.signature as Hex,
    },
  });
}

/** SimpleAccount checks an EIP-191 signature of the user operation hash by its owner. */
const sign = async (op: UserOp, by: Signer) => ({ ...op, signature: await by.signMessage(getBytes(userOpHash(op))) });

/**
 * A user operation of `sender` calling `target` with `data`, its gas fields from eth_estimateUserOperationGas
 * used exactly as returned, its fees from vendor_getUserOperationGasPrice (fast), signed by `by`.
 */
async function prepare(nonce: bigint, target: string, data: string, by: Signer, withFactory: boolean): Promise<UserOp> {
  const account = new Interface(SimpleAccount__factory.abi);
  const prices = await endpoint('vendor_getUserOperationGasPrice', []);
  let op: UserOp = {
    sender,
    nonce: hex(nonce),
    ...(withFactory
      ? {
          factory,
          factoryData: new Interface(SimpleAccountFactory__factory.abi).encodeFunctionData('createAccount', [
            owner.address,
            0n,
          ]),
        }
      : {}),
    callData: account.encodeFunctionData('execute', [target, 0n, data]),
    callGasLimit: '0x0',
    verificationGasLimit: '0x0',
    preVerificationGas: '0x0',
    maxFeePerGas: prices.fast.maxFeePerGas,
    maxPriorityFeePerGas: prices.fast.maxPriorityFeePerGas,
    signature: '0x',
  };
  // Estimation runs validation, so the signature must have the real length and recover to someone (a
  // signature by the owner over the wrong hash: SimpleAccount reports a mismatch, it does not revert).
  op.signature = await owner.signMessage(getBytes(`0x${'00'.repeat(32)}`));
  const estimate = await endpoint('eth_estimateUserOperationGas', [op, entryPoint]);
  op = {
    ...op,
    callGasLimit: estimate.callGasLimit,
    verificationGasLimit: estimate.verificationGasLimit,
    preVerificationGas: estimate.preVerificationGas,
  };
  return sign(op, by);
}

/** The EntryPoint v0.7 calldata form of an operation (PackedUserOperation): gas pairs packed in 16-byte halves. */
function packUserOp(op: UserOp) {
  const pair = (high: string, low: string) => zeroPadValue(toBeHex((BigInt(high) << 128n) | BigInt(low)), 32);
  return {
    sender: op.sender,
    nonce: op.nonce,
    initCode: op.factory ? `${op.factory}${op.factoryData!.slice(2)}` : '0x',
    callData: op.callData,
    accountGasLimits: pair(op.verificationGasLimit, op.callGasLimit),
    preVerificationGas: op.preVerificationGas,
    gasFees: pair(op.maxPriorityFeePerGas, op.maxFeePerGas),
    paymasterAndData: '0x',
    signature: op.signature,
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function receiptOf(hash: string): Promise<any> {
  return waitFor(
    `the receipt of user operation ${hash}`,
    async () => (await endpoint('eth_getUserOperationReceipt', [hash])) ?? undefined,
    45_000,
    250,
  );
}

beforeAll(async () => {
  db = await openTestDb();
  devnet = await startDevnet({
    common,
    db: db.client,
    options: { historyHours: 0, coordinator: false, blockTimeMs: 500, bundler: true },
  });
  const state = devnet.state;
  entryPoint = state.entryPoint!;
  factory = state.accountFactory!;
  // The wiring of `l2stack dev`: the bundler URL and prefix come from the devnet's state.
  const bundlerEnv = devnetBundlerEnv(state, {});
  expect(bundlerEnv).toEqual({ RPC_BUNDLER_URL: state.bundler!.url, RPC_BUNDLER_VENDOR_PREFIX: 'pimlico_' });
  rpc = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc_aa'),
    upstreams: [state.l2.upstreamRpcUrl],
    env: bundlerEnv,
  });
  validate = await resultValidator();
  provider = new JsonRpcProvider(state.l2.upstreamRpcUrl, state.l2.chainId, { staticNetwork: true, cacheTimeout: -1 });
  owner = new Wallet(state.accounts[10]!.privateKey, provider);
  sender = await SimpleAccountFactory__factory.connect(factory, provider).getFunction('getAddress')(owner.address, 0n);
  // The account pays its own gas (no paymaster) and holds the test token it will send.
  const deployer = new Wallet(state.accounts[0]!.privateKey, provider);
  const tst = state.tokens.find((t) => t.symbol === 'TST')!;
  token = TestToken__factory.connect(tst.address, deployer);
  await mined(deployer.sendTransaction({ to: sender, value: parseEther('1') }));
  await mined(token.transfer(sender, parseUnits('100', 18)));
}, 180_000);

afterAll(async () => {
  await rpc?.stop();
  await devnet?.stop();
  provider?.destroy();
  await db?.close();
});

describe('ERC-4337 on the devnet, through the endpoint', () => {
  it('behavior: the EntryPoint and factory are at their CREATE2 addresses and the bundler supports the EntryPoint', async () => {
    expect(entryPoint).toBe(create2Address(EntryPoint__factory.bytecode));
    expect(factory).toBe(
      create2Address(
        `${SimpleAccountFactory__factory.bytecode}${AbiCoder.defaultAbiCoder().encode(['address'], [entryPoint]).slice(2)}`,
      ),
    );
    expect(await provider.getCode(entryPoint)).not.toBe('0x');
    expect(await endpoint('eth_supportedEntryPoints', [])).toEqual([entryPoint]);
    // An operator's own bundler wins over the devnet's.
    expect(devnetBundlerEnv(devnet.state, { RPC_BUNDLER_URL: 'http://127.0.0.1:1' })).toEqual({});
  });

  it('behavior: the first operation deploys the counterfactual account (initCode), the second moves a test token', async () => {
    expect(await provider.getCode(sender)).toBe('0x');
    const first = await prepare(0n, recipient, '0x', owner, true);
    const firstHash = await endpoint('eth_sendUserOperation', [first, entryPoint]);
    expect(firstHash).toBe(userOpHash(first));
    const firstReceipt = await receiptOf(firstHash);
    expect(firstReceipt).toMatchObject({ userOpHash: firstHash, success: true, nonce: '0x0' });
    expect(firstReceipt.sender.toLowerCase()).toBe(sender.toLowerCase());
    expect(await provider.getCode(sender)).not.toBe('0x');

    const amount = parseUnits('12.5', 18);
    const before = await token.balanceOf(sender);
    const second = await prepare(
      1n,
      await token.getAddress(),
      token.interface.encodeFunctionData('transfer', [recipient, amount]),
      owner,
      false,
    );
    const secondHash = await endpoint('eth_sendUserOperation', [second, entryPoint]);
    const secondReceipt = await receiptOf(secondHash);
    expect(secondReceipt).toMatchObject({ userOpHash: secondHash, success: true, nonce: '0x1' });
    expect(await token.balanceOf(recipient)).toBe(amount);
    expect(await token.balanceOf(sender)).toBe(before - amount);

    const byHash = await endpoint('eth_getUserOperationByHash', [secondHash]);
    expect(byHash.entryPoint.toLowerCase()).toBe(entryPoint.toLowerCase());
    expect(byHash.transactionHash).toBe(secondReceipt.receipt.transactionHash);
    expect(byHash.userOperation).toMatchObject({
      sender: second.sender,
      nonce: '0x1',
      callData: second.callData,
      signature: second.signature,
    });

    // vendor_getUserOperationStatus is the bundler's pimlico_getUserOperationStatus, answer for answer. Alto reads
    // eth_getUserOperationReceipt from the chain's logs, but moves its own status from 'submitted' to 'included'
    // only when its block watcher (polling every 125 ms here) has handled the bundle's block, so a read just after
    // the receipt can say 'submitted' (CI, 2026-11-30). 'included' is final: once ours says it, Alto's must too.
    const included = { status: 'included', transactionHash: secondReceipt.receipt.transactionHash };
    await expect
      .poll(() => endpoint('vendor_getUserOperationStatus', [secondHash]), { timeout: 45_000, interval: 250 })
      .toEqual(included);
    expect((await bundlerDirect('pimlico_getUserOperationStatus', [secondHash])).result).toEqual(included);
  });

  it("behavior: vendor_getUserOperationGasPrice is the bundler's pimlico_getUserOperationGasPrice", async () => {
    const ours = await endpoint('vendor_getUserOperationGasPrice', []);
    const theirs = (await bundlerDirect('pimlico_getUserOperationGasPrice', [])).result as typeof ours;
    // The base fee moves block by block, so the two answers a moment apart may differ in maxFeePerGas; what
    // is Alto's own is the shape, its flat tiers (multipliers 100,100,100) and its priority fee.
    expect(Object.keys(ours).sort()).toEqual(['fast', 'slow', 'standard']);
    expect(ours.slow).toEqual(ours.fast);
    expect(ours.standard).toEqual(ours.fast);
    expect(ours.fast.maxPriorityFeePerGas).toBe(theirs.fast.maxPriorityFeePerGas);
    const baseFee = (await provider.getBlock('latest'))!.baseFeePerGas!;
    expect(BigInt(ours.fast.maxFeePerGas)).toBeGreaterThan(baseFee / 2n);
  });

  it("behavior: vendor_simulateAssetChanges shows what a user operation moves, simulated as the EntryPoint's handleOps", async () => {
    const nonce = await EntryPoint__factory.connect(entryPoint, provider).getNonce(sender, 0n);
    const amount = parseUnits('2', 18);
    const op = await prepare(
      nonce,
      await token.getAddress(),
      token.interface.encodeFunctionData('transfer', [recipient, amount]),
      owner,
      false,
    );
    const beneficiary = Wallet.createRandom().address;
    const handleOps = new Interface(EntryPoint__factory.abi).encodeFunctionData('handleOps', [
      [packUserOp(op)],
      beneficiary,
    ]);
    const { changes } = await endpoint('vendor_simulateAssetChanges', [
      { from: beneficiary, to: entryPoint, data: handleOps },
    ]);
    const tokenAddress = (await token.getAddress()).toLowerCase();
    const erc20 = changes.filter((c: { assetType: string }) => c.assetType === 'erc20');
    expect(erc20).toEqual(
      [
        { address: sender.toLowerCase(), assetType: 'erc20', token: tokenAddress, tokenId: null, delta: `-${amount}` },
        {
          address: recipient.toLowerCase(),
          assetType: 'erc20',
          token: tokenAddress,
          tokenId: null,
          delta: amount.toString(),
        },
      ].sort((a, b) => a.address.localeCompare(b.address)),
    );
    // The account's gas is paid to the EntryPoint, which pays the bundler (here: the beneficiary).
    const native = (who: string) =>
      changes.find(
        (c: { address: string; assetType: string }) => c.address === who.toLowerCase() && c.assetType === 'native',
      );
    expect(BigInt(native(beneficiary).delta)).toBeGreaterThan(0n);
    // A simulation: nothing moved for real.
    expect(await token.balanceOf(recipient)).toBe(parseUnits('12.5', 18));
  });

  it("error: an operation with a bad signature is refused with the bundler's AA code and data, passed through", async () => {
    const stranger = Wallet.createRandom();
    const nonce = await EntryPoint__factory.connect(entryPoint, provider).getNonce(sender, 0n);
    const forged = await prepare(nonce, recipient, '0x', stranger, false);
    const ours = await call(rpc.url, 'eth_sendUserOperation', [forged, entryPoint]);
    const theirs = await bundlerDirect('eth_sendUserOperation', [forged, entryPoint]);
    expect(ours.error).toBeDefined();
    // ERC-7769's code for a refused signature, with the EntryPoint's AA24 in the message.
    expect(ours.error!.code).toBe(-32507);
    expect(ours.error!.message).toMatch(/AA24 signature error/);
    expect(ours.error).toEqual(theirs.error);
    expect(await token.balanceOf(recipient)).toBe(parseUnits('12.5', 18));
  });

  it('error: with the bundler stopped every bundler method answers -32002 naming it, and the rest of the endpoint still answers', async () => {
    await devnet.bundler!.stop();
    const hash = `0x${'11'.repeat(32)}`;
    // A complete v0.7 operation: a partial one is refused by the spec before any bundler is asked.
    const op = {
      sender,
      nonce: '0x0',
      callData: '0x',
      callGasLimit: '0x186a0',
      verificationGasLimit: '0x186a0',
      preVerificationGas: '0xc350',
      maxFeePerGas: '0x3b9aca00',
      maxPriorityFeePerGas: '0x3b9aca00',
      signature: '0x',
    };
    const calls: [string, unknown[]][] = [
      ['eth_sendUserOperation', [op, entryPoint]],
      ['eth_estimateUserOperationGas', [op, entryPoint]],
      ['eth_supportedEntryPoints', []],
      ['eth_getUserOperationByHash', [hash]],
      ['eth_getUserOperationReceipt', [hash]],
      ['vendor_getUserOperationGasPrice', []],
      ['vendor_getUserOperationStatus', [hash]],
    ];
    for (const [method, params] of calls) {
      // The bound: the answer comes within 2 s (the request is abandoned after that, failing the test).
      const res = await fetch(rpc.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
        signal: AbortSignal.timeout(2_000),
      });
      expect(res.status, method).toBe(200);
      expect(res.headers.get('content-type'), method).toMatch(/^application\/json/);
      const body = (await res.json()) as RpcReply;
      expect(body.error?.code, method).toBe(-32002);
      expect(body.error?.message, method).toMatch(/^the ERC-4337 bundler is not available/);
    }
    expect(await endpoint('eth_blockNumber', [])).toMatch(/^0x[0-9a-f]+$/);
    expect(await endpoint('eth_getCode', [entryPoint, 'latest'])).not.toBe('0x');
  });
});
