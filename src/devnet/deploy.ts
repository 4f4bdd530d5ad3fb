import { parseEther, parseUnits, encodeBytes32String, type BaseContract, type Signer } from 'ethers';
import {
  L1MessageService__factory,
  L2MessageService__factory,
  NativeToken__factory,
  TestToken__factory,
  Bytes32MetadataToken__factory,
  RevertingMetadataToken__factory,
  DexFactory__factory,
  DexRouter__factory,
  CallRecorder__factory,
  ClaimForwarder__factory,
} from '../../generated/contracts/types/index.js';
import { mined } from '../common/chain/mined.js';

export interface TokenSpec {
  name: string;
  /** Also its key in Deployment['tokens']. */
  symbol: string;
  decimals: number;
  /** Whole tokens minted to the deployer. */
  supply: bigint;
  /** Target USD price used to seed pool liquidity. */
  usdPrice: number;
  kind?: 'standard' | 'native' | 'bytes32' | 'reverting';
  /** Quote token of its pool: USDS or WETH. */
  quote?: 'USDS' | 'WETH';
}

/**
 * The L2's token set: the native token, a USD stablecoin, ordinary tokens, and the awkward cases an
 * indexer must survive (6 decimals, a spammy name, bytes32 metadata, a reverting name()).
 */
export const TOKENS: TokenSpec[] = [
  {
    name: 'l2stack Token',
    symbol: 'L2S',
    decimals: 18,
    supply: 1_000_000_000n,
    usdPrice: 0.05,
    kind: 'native',
    quote: 'USDS',
  },
  { name: 'USD Stable', symbol: 'USDS', decimals: 6, supply: 1_000_000_000n, usdPrice: 1 },
  { name: 'Wrapped Ether', symbol: 'WETH', decimals: 18, supply: 1_000_000n, usdPrice: 3000, quote: 'USDS' },
  { name: 'Test Coin', symbol: 'TST', decimals: 18, supply: 100_000_000n, usdPrice: 3, quote: 'WETH' },
  { name: 'Six Decimals Token', symbol: 'SIX', decimals: 6, supply: 50_000_000n, usdPrice: 1.5, quote: 'USDS' },
  {
    name: 'FREE AIRDROP claim at l2s-rewards.xyz',
    symbol: 'AIRDROP',
    decimals: 18,
    supply: 10_000_000_000_000n,
    usdPrice: 0.000002,
    quote: 'WETH',
  },
  { name: 'Maker', symbol: 'MKR', decimals: 18, supply: 1_000_000n, usdPrice: 1500, kind: 'bytes32', quote: 'WETH' },
  { name: '', symbol: 'BROKE', decimals: 18, supply: 100_000_000n, usdPrice: 0.2, kind: 'reverting', quote: 'USDS' },
];

export interface Deployment {
  l1MessageService: string;
  l2MessageService: string;
  l1CallRecorder: string;
  l2CallRecorder: string;
  /** ClaimForwarder of each message service: a claim-via contract for `*_CLAIM_VIA_ADDRESS`. */
  l1ClaimForwarder: string;
  l2ClaimForwarder: string;
  tokens: Record<string, { address: string; spec: TokenSpec }>;
  dexFactory: string;
  dexRouter: string;
  pairs: { token0: string; token1: string; pair: string }[];
}

export interface DeployOptions {
  l1Deployer: Signer;
  l2Deployer: Signer;
  coordinator: string;
}

async function deployed<T extends { waitForDeployment(): Promise<unknown>; getAddress(): Promise<string> }>(
  c: Promise<T>,
): Promise<string> {
  const contract = await c;
  const sent = (contract as unknown as BaseContract).deploymentTransaction();
  // The deployment's receipt is awaited directly (see mined()); its address is known from the start.
  if (sent) await mined(sent);
  else await contract.waitForDeployment();
  return contract.getAddress();
}

export async function deployMessageServices(
  o: DeployOptions,
): Promise<Pick<Deployment, 'l1MessageService' | 'l2MessageService' | 'l1CallRecorder' | 'l2CallRecorder'>> {
  // L1's rate limit: 10,000 ETH a day; L2: no minimum fee.
  const l1MessageService = await deployed(
    new L1MessageService__factory(o.l1Deployer).deploy(o.coordinator, 86_400, parseEther('10000')),
  );
  const l2MessageService = await deployed(new L2MessageService__factory(o.l2Deployer).deploy(o.coordinator, 0n));
  // What each message service holds to pay out claims of messages sent on the other layer.
  const funding = parseEther('1000');
  await mined(o.l1Deployer.sendTransaction({ to: l1MessageService, value: funding }));
  await mined(o.l2Deployer.sendTransaction({ to: l2MessageService, value: funding }));
  const l1CallRecorder = await deployed(new CallRecorder__factory(o.l1Deployer).deploy());
  const l2CallRecorder = await deployed(new CallRecorder__factory(o.l2Deployer).deploy());
  return { l1MessageService, l2MessageService, l1CallRecorder, l2CallRecorder };
}

/**
 * A ClaimForwarder in front of each message service. Deployed after everything else, so the addresses of
 * the contracts deployed before it (message services, tokens, DEX) are what they were without it.
 */
export async function deployClaimForwarders(o: {
  l1Deployer: Signer;
  l2Deployer: Signer;
  l1MessageService: string;
  l2MessageService: string;
}): Promise<Pick<Deployment, 'l1ClaimForwarder' | 'l2ClaimForwarder'>> {
  const l1ClaimForwarder = await deployed(new ClaimForwarder__factory(o.l1Deployer).deploy(o.l1MessageService));
  const l2ClaimForwarder = await deployed(new ClaimForwarder__factory(o.l2Deployer).deploy(o.l2MessageService));
  return { l1ClaimForwarder, l2ClaimForwarder };
}

export async function deployTokens(deployer: Signer): Promise<Deployment['tokens']> {
  const holder = await deployer.getAddress();
  const tokens: Deployment['tokens'] = {};
  for (const spec of TOKENS) {
    const supply = parseUnits(spec.supply.toString(), spec.decimals);
    let address: string;
    switch (spec.kind) {
      case 'native':
        address = await deployed(new NativeToken__factory(deployer).deploy(spec.name, spec.symbol, holder, supply));
        break;
      case 'bytes32':
        address = await deployed(
          new Bytes32MetadataToken__factory(deployer).deploy(
            encodeBytes32String(spec.name),
            encodeBytes32String(spec.symbol),
            spec.decimals,
            holder,
            supply,
          ),
        );
        break;
      case 'reverting':
        address = await deployed(
          new RevertingMetadataToken__factory(deployer).deploy(spec.symbol, spec.decimals, holder, supply),
        );
        break;
      default:
        address = await deployed(
          new TestToken__factory(deployer).deploy(spec.name, spec.symbol, spec.decimals, holder, supply),
        );
    }
    tokens[spec.symbol] = { address, spec };
  }
  return tokens;
}

/** Human amount (e.g. 0.05) → base units, without going through a float for the scaled value. */
export function units(amount: number, decimals: number): bigint {
  return parseUnits(amount.toFixed(Math.min(decimals, 12)), decimals);
}

/**
 * A V2 DEX with one pool per token against its quote token, seeded at the token's target price with
 * $2M (WETH, L2S: $5M) of liquidity per side.
 */
export async function deployDex(
  deployer: Signer,
  tokens: Deployment['tokens'],
): Promise<Pick<Deployment, 'dexFactory' | 'dexRouter' | 'pairs'>> {
  const owner = await deployer.getAddress();
  const dexFactory = await deployed(new DexFactory__factory(deployer).deploy());
  const dexRouter = await deployed(new DexRouter__factory(deployer).deploy(dexFactory));
  const factory = DexFactory__factory.connect(dexFactory, deployer);
  const router = DexRouter__factory.connect(dexRouter, deployer);
  const approve = async (address: string) =>
    mined(TestToken__factory.connect(address, deployer).approve(dexRouter, 2n ** 256n - 1n));
  for (const t of Object.values(tokens)) await approve(t.address);

  const pairs: Deployment['pairs'] = [];
  for (const { address, spec } of Object.values(tokens)) {
    if (!spec.quote) continue;
    const quote = tokens[spec.quote]!;
    const sideUsd = spec.symbol === 'WETH' || spec.symbol === 'L2S' ? 5_000_000 : 2_000_000;
    const tokenAmount = units(sideUsd / spec.usdPrice, spec.decimals);
    const quoteAmount = units(sideUsd / quote.spec.usdPrice, quote.spec.decimals);
    await mined(router.addLiquidity(address, quote.address, tokenAmount, quoteAmount, owner));
    const pair = await factory.getPair(address, quote.address);
    const [token0, token1] =
      address.toLowerCase() < quote.address.toLowerCase() ? [address, quote.address] : [quote.address, address];
    pairs.push({ token0, token1, pair });
  }
  return { dexFactory, dexRouter, pairs };
}
