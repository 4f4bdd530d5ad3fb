import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Transaction, Wallet, ZeroAddress, id } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { startTestRpc } from '../rpc/helpers.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { ClaimForwarder__factory } from '../../generated/contracts/types/index.js';
import type { MessageRow } from '../../src/relayer/db/repository.js';
import { useClaimChain, type ClaimChain } from './claim-chain.js';

/**
 * The economics of L1→L2 claims on a real anvil with the L2 message service: PROFIT_MARGIN applied
 * exactly, FEE_UNDERPRICED evaluated again only after RETRY_DELAY_IN_SECONDS, sponsoring and its spend
 * metric, fees from eth_feeHistory, svc_estimateGas through our RPC endpoint (and the fallback when the
 * node lacks it), and a claim-via address that is not a contract.
 */
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let c: ClaimChain;
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const gwei = (n: number) => BigInt(Math.round(n * 1e9));
const hex = (n: bigint) => `0x${n.toString(16)}`;

const fixture = useClaimChain();
beforeAll(() => {
  c = fixture.chain;
  testDb = fixture.db;
});

type Pipeline = Awaited<ReturnType<ClaimChain['pipeline']>>;

/** The claimMessage calldata of a row, encoded here (fee recipient zero: the relayer calls the service itself). */
function claimData(m: MessageRow): string {
  return c.service.interface.encodeFunctionData('claimMessage', [
    m.message_sender,
    m.destination,
    m.fee,
    m.value,
    ZeroAddress,
    m.calldata,
    m.message_nonce,
  ]);
}

/** Gas of the relayer's claim of `m`, as eth_estimateGas gives it to the relayer. */
async function claimGas(m: MessageRow): Promise<bigint> {
  return c.provider.estimateGas({ from: c.relayerAddress, to: await c.service.getAddress(), data: claimData(m) });
}

/** Runs the receipt step until every given message has left PENDING (bounded). */
async function settle(p: Pipeline, ids: string[]): Promise<MessageRow[]> {
  for (let i = 0; i < 50; i++) {
    await p.receipts();
    const rows = await Promise.all(ids.map((i) => c.row(i)));
    if (rows.every((r) => r.status !== 'PENDING')) return rows;
    await wait(100);
  }
  return Promise.all(ids.map((i) => c.row(i)));
}

async function claimedEvents(hash: string): Promise<number> {
  const logs = await c.provider.getLogs({
    address: await c.service.getAddress(),
    topics: [id('MessageClaimed(bytes32)'), hash],
    fromBlock: 0,
  });
  return logs.length;
}

/** One sample of a Prometheus text exposition (0 when absent). */
function sample(text: string, name: string, labels: string): bigint {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? 0n : BigInt(line.slice(line.lastIndexOf(' ') + 1));
}

/** Mines empty blocks so the last four carry no tips, the last one with base fee `base` (the next one: 7/8 of it). */
async function quietBlocks(base: bigint): Promise<void> {
  for (let i = 0; i < 3; i++) await c.rpc('evm_mine');
  await c.rpc('anvil_setNextBlockBaseFeePerGas', [hex(base)]);
  await c.rpc('evm_mine');
}

const nonZeroBytes = (n: bigint, length: number) => {
  const digits = n.toString(16);
  const h = digits.length % 2 === 1 ? `0${digits}` : digits;
  return h.length === length * 2 && /^(?:(?!00)[0-9a-f]{2})+$/.test(h);
};

describe('profitability', () => {
  it('behavior: PROFIT_MARGIN is applied exactly: a fee of exactly gas × maxFeePerGas × 1.1 is claimed, one wei less is FEE_UNDERPRICED with the reason', async () => {
    const p = await c.pipeline({ PROFIT_MARGIN: '1.1', RETRY_DELAY_IN_SECONDS: '60' });
    // The claim's gas depends on how many calldata bytes are zero, so every fee here has 7 non-zero bytes:
    // a probe message gives the gas, then a maxFeePerGas m is chosen so that F = gas × m × 1.1 is whole,
    // has 7 non-zero bytes (as has F − 1), and a float computation of gas × m × 1.1 lands above F (a
    // relayer multiplying by the float 1.1 would refuse F).
    const [probe] = await c.addMessages(1, 0x11111111111111n);
    const gas = await claimGas(probe!);
    await c.setStatus(probe!.id, 'EXCLUDED');
    // maxFeePerGas = 2 × next base fee (no tips): base 8t gives next 7t, so m = 14t; m a multiple of 70 keeps F whole.
    const fits = (m: bigint) => {
      const f = (gas * m * 11n) / 10n;
      return nonZeroBytes(f, 7) && (f & 0xffn) >= 2n && Number(gas * m) * 1.1 > Number(f);
    };
    // F = 77 × gas × k: start at F ≈ 1.5 × 2^48 (7 bytes, a few gwei per gas), where the float product
    // gas × m × 1.1 rounds above the exact one (a mantissa of F above 1.38).
    let k = (3n * 2n ** 47n) / (77n * gas);
    for (let tries = 0; !fits(70n * k); tries++, k++)
      if (tries > 10_000) throw new Error('no suitable maxFeePerGas found');
    const m = 70n * k;
    const fee = (gas * m * 11n) / 10n;
    const [exact] = await c.addMessages(1, fee);
    const [short] = await c.addMessages(1, fee - 1n);
    expect([await claimGas(exact!), await claimGas(short!)]).toEqual([gas, gas]);
    await quietBlocks((m / 14n) * 8n);

    const nonce = await c.provider.getTransactionCount(c.relayerAddress, 'pending');
    await p.claim();
    const [claimed] = await settle(p, [exact!.id]);
    expect(claimed!.status).toBe('CLAIMED_SUCCESS');
    const tx = Transaction.from(claimed!.claim_tx_raw!);
    expect([tx.maxFeePerGas, tx.maxPriorityFeePerGas, tx.gasLimit]).toEqual([m, 0n, (gas * 6n) / 5n]);
    const under = await c.row(short!.id);
    expect(under.status).toBe('FEE_UNDERPRICED');
    expect(under.failure_reason).toBe(`fee ${fee - 1n} wei below estimated cost ${gas * m} wei x PROFIT_MARGIN 1.1`);
    expect(await c.provider.getTransactionCount(c.relayerAddress, 'pending')).toBe(nonce + 1);
    expect([await claimedEvents(exact!.message_hash), await claimedEvents(short!.message_hash)]).toEqual([1, 0]);
  });

  it('behavior: a FEE_UNDERPRICED message is evaluated again only after RETRY_DELAY_IN_SECONDS, and claimed once the cost has fallen', async () => {
    const p = await c.pipeline({ RETRY_DELAY_IN_SECONDS: '2' });
    const [probe] = await c.addMessages(1, 1n);
    await c.setStatus(probe!.id, 'EXCLUDED');
    // A fee worth about 10 gwei per gas of the claim: too little at 87.5 gwei, enough at 1.75 gwei.
    const [priced] = await c.addMessages(1, (await claimGas(probe!)) * gwei(10));
    await quietBlocks(gwei(50)); // maxFeePerGas = 2 × 43.75 gwei
    const before = Date.now();
    await p.claim();
    const after = Date.now();
    const r = await c.row(priced!.id);
    expect(r.status).toBe('FEE_UNDERPRICED');
    expect(r.failure_reason).toMatch(/^fee \d+ wei below estimated cost \d+ wei x PROFIT_MARGIN 1$/);
    const retryAt = new Date(r.retry_after!).getTime();
    expect(retryAt).toBeGreaterThanOrEqual(before + 2_000 - 5);
    expect(retryAt).toBeLessThanOrEqual(after + 2_000 + 5);

    // The cost falls, but before RETRY_DELAY_IN_SECONDS the message is not looked at again.
    await quietBlocks(gwei(1));
    const nonce = await c.provider.getTransactionCount(c.relayerAddress, 'pending');
    await p.claim();
    expect(Date.now()).toBeLessThan(retryAt); // (else this check proved nothing)
    const still = await c.row(priced!.id);
    expect([still.status, still.failure_reason, still.retry_after]).toEqual([
      'FEE_UNDERPRICED',
      r.failure_reason,
      r.retry_after,
    ]);
    expect(await c.provider.getTransactionCount(c.relayerAddress, 'pending')).toBe(nonce);

    await wait(retryAt - Date.now() + 50);
    await p.claim();
    const [done] = await settle(p, [priced!.id]);
    expect(done!.status).toBe('CLAIMED_SUCCESS');
    // (The test chain stores messages SENT and anchors them without a history entry.)
    expect((await c.history(priced!.id)).map((h) => h.status)).toEqual([
      'SENT',
      'FEE_UNDERPRICED',
      'PENDING',
      'CLAIMED_SUCCESS',
    ]);
    expect(await claimedEvents(priced!.message_hash)).toBe(1);
  });
});

describe('sponsoring', () => {
  it("behavior: zero-fee and underpriced messages are claimed at the relayer's cost, and relayer_sponsored_spend_wei_total is exactly their gasUsed × effectiveGasPrice", async () => {
    const p = await c.pipeline({ L1_L2_ENABLE_RELAYER_SPONSORING: 'true', MAX_RELAYER_SPONSOR_GAS_LIMIT: '250000' });
    const [zero] = await c.addMessages(1, 0n);
    const [cheap] = await c.addMessages(1, 1n);
    const spentBefore = sample(await c.registry.metrics(), 'relayer_sponsored_spend_wei_total', 'direction="L1_TO_L2"');
    const sentBefore = sample(
      await c.registry.metrics(),
      'relayer_claims_sent_total',
      `direction="L1_TO_L2",sponsored="true",signer="${c.relayerAddress}"`,
    );
    await p.claim();
    const rows = await settle(p, [zero!.id, cheap!.id]);
    expect(rows.map((r) => [r.status, r.is_sponsored])).toEqual([
      ['CLAIMED_SUCCESS', true],
      ['CLAIMED_SUCCESS', true],
    ]);
    let cost = 0n;
    for (const r of rows) {
      const receipt = (await c.provider.getTransactionReceipt(r.claim_tx_hash!))!;
      expect(receipt.status).toBe(1);
      cost += receipt.gasUsed * receipt.gasPrice;
    }
    expect(cost).toBeGreaterThan(0n);
    const text = await c.registry.metrics();
    expect(sample(text, 'relayer_sponsored_spend_wei_total', 'direction="L1_TO_L2"') - spentBefore).toBe(cost);
    expect(
      sample(text, 'relayer_claims_sent_total', `direction="L1_TO_L2",sponsored="true",signer="${c.relayerAddress}"`) -
        sentBefore,
    ).toBe(2n);
    for (const r of rows) expect(await claimedEvents(r.message_hash)).toBe(1);
  });

  it('behavior: above MAX_RELAYER_SPONSOR_GAS_LIMIT a zero-fee message is ZERO_FEE and an underpriced one FEE_UNDERPRICED, nothing sent', async () => {
    const p = await c.pipeline({ L1_L2_ENABLE_RELAYER_SPONSORING: 'true', MAX_RELAYER_SPONSOR_GAS_LIMIT: '30000' });
    const [zero] = await c.addMessages(1, 0n);
    const [cheap] = await c.addMessages(1, 1n);
    const gas = await claimGas(zero!);
    const spentBefore = sample(await c.registry.metrics(), 'relayer_sponsored_spend_wei_total', 'direction="L1_TO_L2"');
    const nonce = await c.provider.getTransactionCount(c.relayerAddress, 'pending');
    await p.claim();
    const z = await c.row(zero!.id);
    expect([z.status, z.failure_reason]).toEqual([
      'ZERO_FEE',
      `zero-fee message needs ${gas} gas, above MAX_RELAYER_SPONSOR_GAS_LIMIT 30000`,
    ]);
    const u = await c.row(cheap!.id);
    expect(u.status).toBe('FEE_UNDERPRICED');
    expect(u.failure_reason).toMatch(/^fee 1 wei below estimated cost \d+ wei x PROFIT_MARGIN 1$/);
    expect(await c.provider.getTransactionCount(c.relayerAddress, 'pending')).toBe(nonce);
    expect(sample(await c.registry.metrics(), 'relayer_sponsored_spend_wei_total', 'direction="L1_TO_L2"')).toBe(
      spentBefore,
    );
  });
});

describe('gas and fees', () => {
  it('behavior: tip = mean GAS_ESTIMATION_PERCENTILE reward of the last 4 blocks, maxFeePerGas = 2 × next base fee + tip', async () => {
    const low = await c.pipeline({ GAS_ESTIMATION_PERCENTILE: '20' });
    const high = await c.pipeline({ GAS_ESTIMATION_PERCENTILE: '80' });
    const [a, b] = await c.addMessages(2);
    await c.setStatus(b!.id, 'SENT');
    // Four blocks with two equal-gas transfers each: tips i and i + 4 gwei (i = 1..4). The 20th percentile
    // reward of each block is the lower tip (mean 2.5 gwei), the 80th the higher one (mean 6.5 gwei).
    const filler = new Wallet(devAccounts(3)[2]!.privateKey, c.provider);
    let nonce = await filler.getNonce();
    await c.rpc('evm_setAutomine', [false]);
    try {
      for (let i = 1; i <= 4; i++) {
        for (const tip of [gwei(i), gwei(i + 4)]) {
          await filler.sendTransaction({
            to: filler.address,
            nonce: nonce++,
            gasLimit: 21_000n,
            maxPriorityFeePerGas: tip,
            maxFeePerGas: gwei(100),
          });
        }
        await c.rpc('evm_mine');
      }
      const history = await c.rpc<{ baseFeePerGas: string[] }>('eth_feeHistory', ['0x1', 'latest', []]);
      const nextBase = BigInt(history.baseFeePerGas.at(-1)!);
      await low.claim();
      await c.setStatus(b!.id, 'ANCHORED');
      await high.claim();
      const ra = Transaction.from((await c.row(a!.id)).claim_tx_raw!);
      const rb = Transaction.from((await c.row(b!.id)).claim_tx_raw!);
      expect([ra.maxPriorityFeePerGas, ra.maxFeePerGas]).toEqual([gwei(2.5), 2n * nextBase + gwei(2.5)]);
      expect([rb.maxPriorityFeePerGas, rb.maxFeePerGas]).toEqual([gwei(6.5), 2n * nextBase + gwei(6.5)]);
      await c.rpc('evm_mine');
    } finally {
      await c.rpc('evm_setAutomine', [true]);
    }
    const rows = await settle(low, [a!.id, b!.id]);
    expect(rows.map((r) => r.status)).toEqual(['CLAIMED_SUCCESS', 'CLAIMED_SUCCESS']);
  });
});

describe('ENABLE_SVC_ESTIMATE_GAS', () => {
  let rpc: Awaited<ReturnType<typeof startTestRpc>> | undefined;
  afterAll(async () => {
    await rpc?.stop();
  });

  it('behavior: a node without svc_estimateGas: one warning, then eth_estimateGas and fee history; the messages are claimed', async () => {
    const p = await c.pipeline({ ENABLE_SVC_ESTIMATE_GAS: 'true' }); // straight to anvil
    const lines = c.logLines.length;
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const [m] = await c.addMessages(1);
      const gas = await claimGas(m!);
      await p.claim();
      const [r] = await settle(p, [m!.id]);
      expect(r!.status).toBe('CLAIMED_SUCCESS');
      expect(BigInt(r!.claim_gas_limit!)).toBe((gas * 6n) / 5n);
      ids.push(m!.id);
    }
    const warned = c.logLines.slice(lines).filter((l) => l.includes('does not serve svc_estimateGas'));
    expect(warned).toHaveLength(1);
    expect(JSON.parse(warned[0]!).level).toBe(40);
  });

  it("behavior: through our RPC endpoint the claim's gas limit and fees come from svc_estimateGas (counted by the endpoint), not eth_estimateGas", async () => {
    rpc = await startTestRpc({ db: testDb.client, schema: testDb.schema('rpc'), upstreams: [c.anvil.url] });
    const p = await c.pipeline({ ENABLE_SVC_ESTIMATE_GAS: 'true', L2_RPC_URL: rpc.url });
    const [m] = await c.addMessages(1);
    const call = { from: c.relayerAddress, to: await c.service.getAddress(), data: claimData(m!) };
    const expected = (await p.chain.provider.send('svc_estimateGas', [call])) as {
      gasLimit: string;
      baseFeePerGas: string;
      priorityFeePerGas: string;
    };
    const calls = async (method: string) =>
      sample(await rpc!.common.metrics.metrics(), 'l2stack_rpc_calls_total', `method="${method}",outcome="ok"`);
    const [svcBefore, ethBefore] = [await calls('svc_estimateGas'), await calls('eth_estimateGas')];
    await p.claim();
    expect((await calls('svc_estimateGas')) - svcBefore).toBe(1n);
    expect((await calls('eth_estimateGas')) - ethBefore).toBe(0n);
    const [r] = await settle(p, [m!.id]);
    expect(r!.status).toBe('CLAIMED_SUCCESS');
    const tx = Transaction.from(r!.claim_tx_raw!);
    const tip = BigInt(expected.priorityFeePerGas);
    expect([tx.gasLimit, tx.maxFeePerGas, tx.maxPriorityFeePerGas]).toEqual([
      (BigInt(expected.gasLimit) * 6n) / 5n,
      BigInt(expected.baseFeePerGas) + tip,
      tip,
    ]);
    expect(await claimedEvents(m!.message_hash)).toBe(1);
  });
});

describe('claim via', () => {
  it('error: a claim-via address without contract code stops claiming with an error naming the variable; with code there, claims go through it', async () => {
    const via = Wallet.createRandom().address.toLowerCase();
    const p = await c.pipeline({ L2_CLAIM_VIA_ADDRESS: via });
    const [m] = await c.addMessages(1);
    const nonce = await c.provider.getTransactionCount(c.relayerAddress, 'pending');
    await expect(p.claim()).rejects.toThrow(
      `L2_CLAIM_VIA_ADDRESS ${via} has no contract code on L2; no claim is sent until it has`,
    );
    expect((await c.row(m!.id)).status).toBe('ANCHORED');
    expect(await c.provider.getTransactionCount(c.relayerAddress, 'pending')).toBe(nonce);

    // A ClaimForwarder's code (its target is immutable, so the code alone forwards to this service).
    const deployer = new Wallet(devAccounts(1)[0]!.privateKey, c.provider);
    const forwarder = await new ClaimForwarder__factory(deployer).deploy(await c.service.getAddress());
    await forwarder.waitForDeployment();
    await c.rpc('anvil_setCode', [via, await c.provider.getCode(await forwarder.getAddress())]);
    const balance = await c.provider.getBalance(c.relayerAddress);
    await p.claim();
    const [r] = await settle(p, [m!.id]);
    expect(r!.status).toBe('CLAIMED_SUCCESS');
    const tx = (await c.provider.getTransaction(r!.claim_tx_hash!))!;
    const receipt = (await c.provider.getTransactionReceipt(r!.claim_tx_hash!))!;
    expect(tx.to!.toLowerCase()).toBe(via);
    // The fee went to the relayer (named as fee recipient), not to the forwarder.
    expect(await c.provider.getBalance(c.relayerAddress)).toBe(
      balance + BigInt(m!.fee) - receipt.gasUsed * receipt.gasPrice,
    );
    expect(await c.provider.getBalance(via)).toBe(0n);
    expect(await claimedEvents(m!.message_hash)).toBe(1);
  });
});
