import { DexV2Interface, DexV3Interface, ERC20Interface } from '../../../generated/contracts/abi/index.js';

/**
 * The DEX events the indexer reads: Uniswap V2 and V3 shapes (most EVM DEXes are forks of one of them).
 * The ABIs are specs/abi/DexV2.json, DexV3.json and ERC20.json, through the bindings codegen emits; the
 * Interfaces are built once when those modules load. Factory and pair (pool) share one spec file each.
 */
export const v2FactoryAbi = DexV2Interface;
export const v2PairAbi = DexV2Interface;
export const v3FactoryAbi = DexV3Interface;
export const v3PoolAbi = DexV3Interface;

export const TOPICS = {
  pairCreated: v2FactoryAbi.getEvent('PairCreated')!.topicHash,
  poolCreated: v3FactoryAbi.getEvent('PoolCreated')!.topicHash,
  v2Swap: v2PairAbi.getEvent('Swap')!.topicHash,
  v2Sync: v2PairAbi.getEvent('Sync')!.topicHash,
  v3Swap: v3PoolAbi.getEvent('Swap')!.topicHash,
} as const;

export const erc20Abi = ERC20Interface;
