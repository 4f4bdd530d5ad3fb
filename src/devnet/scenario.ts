import { parseEther, parseUnits, type JsonRpcProvider, type Signer } from 'ethers';
import {
  DexRouter__factory,
  NativeToken__factory,
  TestToken__factory,
  L1MessageService__factory,
  L2MessageService__factory,
} from '../../generated/contracts/types/index.js';
import type { Deployment } from './deploy.js';
import { units } from './deploy.js';
import type { Logger } from '../common/log.js';
import { sleep } from '../common/shutdown.js';
import { mined } from '../common/chain/mined.js';

/** Small deterministic PRNG (mulberry32): the same history on every start, so demos and tests agree. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface HistoryContext {
  l2: JsonRpcProvider;
  deployer: Signer;
  /** Swaps the history; `traders` all get 2% of every token and router approval. */
  trader: Signer;
  traders: Signer[];
  deployment: Deployment;
  excludedWallets: { address: string; amount: bigint }[];
  /** Unix seconds at which the generated history starts and ends. */
  from: number;
  to: number;
  logger?: Logger;
}

const SWAPS_PER_HOUR = 4;

const tokenCount = (d: Deployment) => Object.keys(d.tokens).length;

const setNextTimestamp = (provider: JsonRpcProvider, ts: number) => provider.send('evm_setNextBlockTimestamp', [ts]);

/**
 * Writes a day of activity into the L2 with past timestamps: swaps on every pool spread over each hour
 * (prices drift), one burn of the native token, and transfers to the excluded wallets. Runs before
 * interval mining starts, one block per transaction.
 */
export async function generateHistory(ctx: HistoryContext): Promise<{ swaps: number; burned: bigint }> {
  const { l2, deployer, trader, deployment } = ctx;
  const random = prng(42);
  const hours = Math.floor((ctx.to - ctx.from) / 3600);
  const txCount = hours * SWAPS_PER_HOUR + ctx.traders.length * tokenCount(deployment) * 2 + 10;
  const step = Math.max(1, Math.floor((ctx.to - ctx.from) / txCount));
  let clock = ctx.from;
  const tick = async () => {
    clock = Math.min(clock + step, ctx.to);
    await setNextTimestamp(l2, clock);
  };
  const traderAddress = await trader.getAddress();
  const router = DexRouter__factory.connect(deployment.dexRouter, trader);
  const tokenList = Object.values(deployment.tokens);

  // Fund the traders with 2% of every token each and let the router spend it.
  for (const who of ctx.traders) {
    for (const { address } of tokenList) {
      const token = TestToken__factory.connect(address, deployer);
      const balance = await token.balanceOf(await deployer.getAddress());
      await tick();
      await mined(token.transfer(await who.getAddress(), balance / 50n));
      await tick();
      await mined(TestToken__factory.connect(address, who).approve(deployment.dexRouter, 2n ** 256n - 1n));
    }
  }

  const tradable = tokenList.filter((t) => t.spec.quote);
  let swaps = 0;
  let burned = 0n;
  const native = tokenList.find((t) => t.spec.kind === 'native')!;
  for (let hour = 0; hour < hours; hour++) {
    for (let i = 0; i < SWAPS_PER_HOUR; i++) {
      const t = tradable[(hour * SWAPS_PER_HOUR + i) % tradable.length]!;
      const quote = deployment.tokens[t.spec.quote!]!;
      // A slight upward bias on buys keeps prices drifting rather than oscillating around the seed.
      const buy = random() < 0.55;
      const usd = 2_000 + random() * 20_000;
      const [tokenIn, amountIn] = buy
        ? [quote.address, units(usd / quote.spec.usdPrice, quote.spec.decimals)]
        : [t.address, units(usd / t.spec.usdPrice, t.spec.decimals)];
      const tokenOut = buy ? t.address : quote.address;
      await tick();
      await mined(router.swapExactTokensForTokens(amountIn, 0n, tokenIn, tokenOut, traderAddress));
      swaps++;
    }
    if (hour === Math.floor(hours / 2)) {
      burned = parseUnits('1000000', 18);
      await tick();
      await mined(NativeToken__factory.connect(native.address, deployer).burn(burned));
    }
    if (hour === hours - 2) {
      for (const w of ctx.excludedWallets) {
        await tick();
        await mined(TestToken__factory.connect(native.address, deployer).transfer(w.address, w.amount));
      }
    }
  }
  ctx.logger?.info({ swaps, hours, burned: burned.toString() }, 'generated L2 history');
  return { swaps, burned };
}

export interface TrafficContext {
  l1Sender: Signer;
  l2Sender: Signer;
  deployment: Deployment;
  intervalMs: number;
  signal: AbortSignal;
  logger?: Logger;
}

/**
 * `--traffic`: light live activity so a running stack has something to show: a swap and one message each
 * way every interval, from an account no test or service uses.
 */
export async function runTraffic(ctx: TrafficContext): Promise<void> {
  const random = prng(7);
  const sender = await ctx.l2Sender.getAddress();
  const router = DexRouter__factory.connect(ctx.deployment.dexRouter, ctx.l2Sender);
  const usds = ctx.deployment.tokens.USDS!;
  const weth = ctx.deployment.tokens.WETH!;
  const l1 = L1MessageService__factory.connect(ctx.deployment.l1MessageService, ctx.l1Sender);
  const l2 = L2MessageService__factory.connect(ctx.deployment.l2MessageService, ctx.l2Sender);
  while (!ctx.signal.aborted) {
    try {
      const buy = random() < 0.5;
      const amount = buy ? units(500 + random() * 2_000, 6) : units((500 + random() * 2_000) / 3000, 18);
      const [tokenIn, tokenOut] = buy ? [usds.address, weth.address] : [weth.address, usds.address];
      await mined(router.swapExactTokensForTokens(amount, 0n, tokenIn, tokenOut, sender));
      const fee = parseEther('0.001');
      await mined(l1.sendMessage(sender, fee, '0x', { value: fee + parseEther('0.01') }));
      await mined(l2.sendMessage(sender, fee, '0x', { value: fee + parseEther('0.01') }));
    } catch (err) {
      if (!ctx.signal.aborted) ctx.logger?.warn({ err }, 'traffic step failed; continuing');
    }
    await sleep(ctx.intervalMs, ctx.signal);
  }
}
