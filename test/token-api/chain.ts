import {
  AbiCoder,
  encodeBytes32String,
  parseUnits,
  toBeHex,
  zeroPadValue,
  type JsonRpcProvider,
  type Signer,
} from 'ethers';
import {
  Bytes32MetadataToken__factory,
  DexFactory__factory,
  DexPair__factory,
  DexRouter__factory,
  RevertingMetadataToken__factory,
  TestToken__factory,
  type DexRouter,
} from '../../generated/contracts/types/index.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { TOPICS } from '../../src/token-api/indexer/abi.js';
import { ResendingWallet } from '../helpers/chain.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * A small DEX world on a bare anvil for indexer tests: a stablecoin, WETH, ordinary and awkward tokens,
 * V2 pools through the devnet contracts, and V3 events from tiny log-emitting contracts placed with
 * anvil_setCode (no V3 pool contract exists in the devnet, the indexer only reads events).
 */

// Runtime code: LOG4 with topics = calldata[0..128), data = calldata[128..). And LOG3 with topics from [0..96).
const LOG4_EMITTER = '0x60803603806080600037606035604035602035600035846000a400';
const LOG3_EMITTER = '0x60603603806060600037604035602035600035836000a300';

export interface World {
  provider: JsonRpcProvider;
  deployer: Signer;
  owner: string;
  router: DexRouter;
  factory: string;
  tokens: Record<'USDS' | 'WETH' | 'TST' | 'SIX' | 'SPAM' | 'MKR' | 'BROKE' | 'VTK', string>;
  pair(a: string, b: string): Promise<string>;
  v3Factory: string;
  v3Pool: string;
}

const MAX = 2n ** 256n - 1n;

export async function buildWorld(provider: JsonRpcProvider): Promise<World> {
  // Signs locally and sends again while unmined: anvil under load has dropped an acknowledged send.
  const deployer = new ResendingWallet(devAccounts(1)[0]!.privateKey, provider);
  const owner = await deployer.getAddress();
  const deploy = async (p: Promise<{ waitForDeployment(): Promise<unknown>; getAddress(): Promise<string> }>) => {
    const c = await p;
    await c.waitForDeployment();
    return (await c.getAddress()).toLowerCase();
  };
  const erc = (name: string, symbol: string, decimals: number, supply: number) =>
    deploy(
      new TestToken__factory(deployer).deploy(name, symbol, decimals, owner, parseUnits(String(supply), decimals)),
    );
  const tokens = {
    USDS: await erc('USD Stable', 'USDS', 6, 1_000_000_000),
    WETH: await erc('Wrapped Ether', 'WETH', 18, 1_000_000),
    TST: await erc('Test Coin', 'TST', 18, 100_000_000),
    SIX: await erc('Six Decimals', 'SIX', 6, 1_000_000),
    SPAM: await erc('FREE AIRDROP claim at l2s-rewards.xyz', 'AIRDROP', 18, 1_000_000_000),
    MKR: await deploy(
      new Bytes32MetadataToken__factory(deployer).deploy(
        encodeBytes32String('Maker'),
        encodeBytes32String('MKR'),
        18,
        owner,
        parseUnits('1000000', 18),
      ),
    ),
    BROKE: await deploy(
      new RevertingMetadataToken__factory(deployer).deploy('BROKE', 18, owner, parseUnits('1000000', 18)),
    ),
    VTK: await erc('V3 Token', 'VTK', 18, 10_000_000),
  };
  const factory = await deploy(new DexFactory__factory(deployer).deploy());
  const routerAddress = await deploy(new DexRouter__factory(deployer).deploy(factory));
  const router = DexRouter__factory.connect(routerAddress, deployer);
  for (const t of Object.values(tokens))
    await mined(TestToken__factory.connect(t, deployer).approve(routerAddress, MAX));
  const dex = DexFactory__factory.connect(factory, deployer);
  const v3Factory = '0x00000000000000000000000000000000000f3f3f';
  const v3Pool = '0x00000000000000000000000000000000000f3001';
  await provider.send('anvil_setCode', [v3Factory, LOG4_EMITTER]);
  await provider.send('anvil_setCode', [v3Pool, LOG3_EMITTER]);
  return {
    provider,
    deployer,
    owner,
    router,
    factory,
    tokens,
    pair: async (a, b) => (await dex.getPair(a, b)).toLowerCase(),
    v3Factory,
    v3Pool,
  };
}

export async function addLiquidity(w: World, a: string, b: string, amountA: bigint, amountB: bigint): Promise<void> {
  await mined(w.router.addLiquidity(a, b, amountA, amountB, w.owner));
}

export async function swap(w: World, tokenIn: string, tokenOut: string, amountIn: bigint): Promise<void> {
  await mined(w.router.swapExactTokensForTokens(amountIn, 0n, tokenIn, tokenOut, w.owner));
}

/** Spot price of `token` in `quote` from a V2 pair's reserves (whole tokens). */
export async function v2Price(
  w: World,
  token: string,
  quote: string,
  decToken: number,
  decQuote: number,
): Promise<number> {
  const pair = DexPair__factory.connect(await w.pair(token, quote), w.provider);
  const [r0, r1] = await pair.getReserves();
  const token0 = (await pair.token0()).toLowerCase();
  const [rt, rq] = token0 === token ? [r0, r1] : [r1, r0];
  return Number(rq) / 10 ** decQuote / (Number(rt) / 10 ** decToken);
}

export async function setNextTimestamp(w: World, date: Date): Promise<void> {
  await w.provider.send('evm_setNextBlockTimestamp', [Math.floor(date.getTime() / 1000)]);
}

const coder = AbiCoder.defaultAbiCoder();
const word = (hex: string) => zeroPadValue(hex, 32).slice(2);

/** Emits a V3 PoolCreated from the fake factory. */
export async function v3PoolCreated(w: World, token0: string, token1: string, fee: number): Promise<void> {
  const data = `0x${word(TOPICS.poolCreated)}${word(token0)}${word(token1)}${word(toBeHex(fee))}${coder.encode(['int24', 'address'], [60, w.v3Pool]).slice(2)}`;
  await mined(w.deployer.sendTransaction({ to: w.v3Factory, data }));
}

/** Emits a V3 Swap from the fake pool. */
export async function v3Swap(
  w: World,
  amount0: bigint,
  amount1: bigint,
  sqrtPriceX96: bigint,
  liquidity: bigint,
): Promise<void> {
  const body = coder
    .encode(['int256', 'int256', 'uint160', 'uint128', 'int24'], [amount0, amount1, sqrtPriceX96, liquidity, 0])
    .slice(2);
  const data = `0x${word(TOPICS.v3Swap)}${word(w.owner)}${word(w.owner)}${body}`;
  await mined(w.deployer.sendTransaction({ to: w.v3Pool, data }));
}

/** √(price of token0 in token1, raw units) × 2^96 for a USD price, from whole-token terms. */
export function sqrtPriceX96For(price0In1: number, dec0: number, dec1: number): bigint {
  const raw = price0In1 * 10 ** (dec1 - dec0);
  return BigInt(Math.round(Math.sqrt(raw) * 2 ** 96));
}
