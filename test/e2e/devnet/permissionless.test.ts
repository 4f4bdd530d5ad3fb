import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Hex } from 'viem';
import { privateKeyToAddress, generatePrivateKey } from 'viem/accounts';
import { startDevnet, type Devnet } from '../../../src/devnet/devnet.js';
import { devnetBundlerEnv } from '../../../src/devnet/services/rpc.js';
import { openTestDb } from '../../helpers/db.js';
import {
  SDK_VERSIONS,
  deployPaymaster,
  fund,
  installedVersion,
  nodeClient,
  simpleAccount,
  smartAccountClient,
} from '../../helpers/smart-account.js';
import { startTestRpc, testCommon } from '../../rpc/helpers.js';

/**
 * Issue 36: the most used ERC-4337 SDK as a new user runs it. permissionless `toSimpleSmartAccount` (EntryPoint
 * v0.7, the devnet's SimpleAccountFactory) and `createSmartAccountClient`, estimate → send → receipt, with our
 * endpoint as the bundler transport and, the same flow, straight to the devnet's Alto. A devnet of its own,
 * as test/e2e/devnet/aa.test.ts: the shared e2e devnet runs without a bundler. The devnet deploys no
 * paymaster: the flows pay their own gas, and once more sponsored by a paymaster this file deploys.
 */

let devnet: Devnet;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;

beforeAll(async () => {
  db = await openTestDb();
  devnet = await startDevnet({
    common: testCommon(),
    db: db.client,
    options: { historyHours: 0, coordinator: false, blockTimeMs: 500, bundler: true },
  });
  rpc = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc_sdk_aa'),
    upstreams: [devnet.state.l2.upstreamRpcUrl],
    env: devnetBundlerEnv(devnet.state, {}),
  });
}, 240_000);

afterAll(async () => {
  await rpc?.stop();
  await devnet?.stop();
  await db?.close();
});

/**
 * One user's first two operations: the first deploys the counterfactual SimpleAccount (factory, factoryData)
 * and pays 1,000 wei, the second pays 2,000 more; each estimated by the SDK, sent, and waited for (bounded).
 */
async function userFlow(ownerIndex: number, bundlerUrl: string, bundlerIsBare: boolean, paymaster?: Hex) {
  const state = devnet.state;
  const node = nodeClient(state);
  const account = await simpleAccount(state, ownerIndex);
  // A sponsored account holds only what it sends on.
  await fund(state, account.address, paymaster ? 3_000n : parseEther('1'));
  const recipient = privateKeyToAddress(generatePrivateKey());
  const client = smartAccountClient(state, account, bundlerUrl, bundlerIsBare, paymaster);
  expect(await node.getCode({ address: account.address })).toBeUndefined();

  const estimate = await client.estimateUserOperationGas({ calls: [{ to: recipient, value: 1_000n, data: '0x' }] });
  expect(estimate.callGasLimit).toBeGreaterThan(0n);
  expect(estimate.verificationGasLimit).toBeGreaterThan(0n);
  // Without a paymaster the estimate's paymaster gas limits are 0x0, and the SDK copies them into the send (issue 36).
  if (!paymaster) expect([estimate.paymasterVerificationGasLimit, estimate.paymasterPostOpGasLimit]).toEqual([0n, 0n]);
  else expect(estimate.paymasterVerificationGasLimit).toBeGreaterThan(0n);

  const receipts: { hash: Hex; nonce: bigint }[] = [];
  for (const value of [1_000n, 2_000n]) {
    const hash = await client.sendUserOperation({ calls: [{ to: recipient, value, data: '0x' }] });
    const receipt = await client.waitForUserOperationReceipt({ hash, timeout: 60_000 });
    expect(receipt).toMatchObject({ userOpHash: hash, success: true });
    expect(receipt.sender.toLowerCase()).toBe(account.address.toLowerCase());
    receipts.push({ hash, nonce: receipt.nonce });
  }
  expect(await node.getCode({ address: account.address })).toMatch(/^0x[0-9a-f]+$/);
  expect(await node.getBalance({ address: recipient })).toBe(3_000n);
  // Sponsored: the account paid no gas, the paymaster's deposit did.
  if (paymaster) expect(await node.getBalance({ address: account.address })).toBe(0n);
  // The operation as the bundler holds it, read back through the same transport (the SDK draws a nonce key per
  // operation).
  const byHash = await client.getUserOperation({ hash: receipts[1]!.hash });
  expect(byHash.userOperation.sender.toLowerCase()).toBe(account.address.toLowerCase());
  expect(byHash.userOperation.nonce).toBe(receipts[1]!.nonce);
}

describe('permissionless SimpleAccount on EntryPoint v0.7', () => {
  it('behavior: the pinned SDK versions are the installed ones (when one moves, this says so before the flows do)', () => {
    expect({ permissionless: installedVersion('permissionless'), viem: installedVersion('viem') }).toEqual({
      permissionless: SDK_VERSIONS.permissionless,
      viem: SDK_VERSIONS.viem,
    });
  });

  it('behavior: through the endpoint as the bundler transport: estimate, send (deploys the account), receipt, and a second operation', async () => {
    await userFlow(13, rpc.url, false);
  });

  it("behavior: the same flow straight to the devnet's Alto (fees and nonce from the node)", async () => {
    await userFlow(14, devnet.state.bundler!.url, true);
  });

  it('behavior: sponsored by a paymaster (deployed here, deposit at the EntryPoint), the account holding no gas money: through the endpoint and straight to Alto', async () => {
    const paymaster = await deployPaymaster(devnet.state, parseEther('10'));
    await userFlow(15, rpc.url, false, paymaster);
    await userFlow(16, devnet.state.bundler!.url, true, paymaster);
  });
});
