import { Interface } from 'ethers';

/** The DEX events the indexer reads: Uniswap V2 and V3 shapes (most EVM DEXes are forks of one of them). */
export const v2FactoryAbi = new Interface(['event PairCreated(address indexed token0, address indexed token1, address pair, uint256)']);
export const v2PairAbi = new Interface([
  'event Swap(address indexed sender, uint256 amount0In, uint256 amount1In, uint256 amount0Out, uint256 amount1Out, address indexed to)',
  'event Sync(uint112 reserve0, uint112 reserve1)',
]);
export const v3FactoryAbi = new Interface([
  'event PoolCreated(address indexed token0, address indexed token1, uint24 indexed fee, int24 tickSpacing, address pool)',
]);
export const v3PoolAbi = new Interface([
  'event Swap(address indexed sender, address indexed recipient, int256 amount0, int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)',
]);

export const TOPICS = {
  pairCreated: v2FactoryAbi.getEvent('PairCreated')!.topicHash,
  poolCreated: v3FactoryAbi.getEvent('PoolCreated')!.topicHash,
  v2Swap: v2PairAbi.getEvent('Swap')!.topicHash,
  v2Sync: v2PairAbi.getEvent('Sync')!.topicHash,
  v3Swap: v3PoolAbi.getEvent('Swap')!.topicHash,
} as const;

export const erc20Abi = new Interface([
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function decimals() view returns (uint8)',
  'function totalSupply() view returns (uint256)',
]);
