import type { JsonRpcProvider, Log } from 'ethers';
import { mapLimit } from '../../common/concurrency.js';
import type { Queries } from '../../common/db/queries.js';
import type { TokenIndexerConfig } from '../config.js';
import { TOPICS, v2FactoryAbi, v2PairAbi, v3FactoryAbi, v3PoolAbi } from './abi.js';
import { readTokenMetadata } from './metadata.js';
import { PriceOracle, type Observation, type PoolState, type PricingInput, type QuoteBook } from './pricing.js';
import { DEFAULT_PRICING } from './sources.js';
import { swapNet, swapVolumes, type SwapVolume } from './volumes.js';
import { isPossibleSpam } from './spam.js';
import type { ListedToken } from './token-list.js';
import { IndexerStore, type NewPool, type NewToken, type SwapRow } from './store.js';
import { recordCandles, recordSources, swapVolumesUsd } from './candles-store.js';

/** What one batch indexed: logs read, pools and tokens found, swaps and price observations recorded. */
export type BatchResult = Record<'logs' | 'newPools' | 'newTokens' | 'swaps' | 'observations', number>;

/**
 * The indexer's in-memory view (pools, decimals, quote prices) and the processing of one block range:
 * discover pools, read new tokens' metadata, replay Sync/Swap logs in chain order, price the touched
 * tokens after every block, and write it all with the cursor in one transaction.
 */
export class IndexerEngine {
  readonly pools = new Map<string, PoolState>();
  readonly poolsByToken = new Map<string, Set<string>>();
  readonly decimals = new Map<string, number>();
  listed = new Map<string, ListedToken>();
  quotePrices: QuoteBook = new Map();
  readonly oracle: PriceOracle;
  private readonly v2 = new Set<string>();
  private readonly v3 = new Set<string>();
  private readonly input: PricingInput;

  constructor(
    readonly config: TokenIndexerConfig,
    readonly provider: JsonRpcProvider,
    readonly store: IndexerStore,
    private readonly db: Queries,
  ) {
    for (const f of config.v2Factories) this.v2.add(f.toLowerCase());
    for (const f of config.v3Factories) this.v3.add(f.toLowerCase());
    this.oracle = new PriceOracle(new Set(config.stableTokens), new Set(config.quoteTokens), {
      minLiquidityUsd: config.minLiquidityUsd,
      ...DEFAULT_PRICING,
      ...config.pricing,
    });
    this.input = { pools: this.pools, poolsByToken: this.poolsByToken, decimals: (t) => this.decimals.get(t) };
  }

  /** (Re)loads the view from the database: at start and after a failed batch. */
  async load(): Promise<void> {
    this.pools.clear();
    this.poolsByToken.clear();
    this.decimals.clear();
    for (const t of await this.db.query('token_api.load_tokens', (knex) => this.store.loadTokens(knex)))
      this.decimals.set(t.address, t.decimals);
    let latest = 0;
    for (const p of await this.db.query('token_api.load_pools', (knex) => this.store.loadPools(knex))) {
      this.addPool(p);
      latest = Math.max(latest, p.stateTimeMs ?? 0);
    }
    // Until the next block, quotes are priced as of the newest state indexed (the chain's time, not ours).
    this.quotePrices = this.oracle.quotePrices(this.input, latest || Date.now());
  }

  private addPool(p: PoolState): void {
    this.pools.set(p.address, p);
    for (const t of [p.token0, p.token1]) {
      let set = this.poolsByToken.get(t);
      if (!set) this.poolsByToken.set(t, (set = new Set()));
      set.add(p.address);
    }
  }

  /** The token list's word on `address`, and whether the token looks like spam given that and its metadata. */
  listingOf(address: string, meta: { name: string; symbol: string; complete: boolean }) {
    const listing = this.listed.get(address);
    const listed = listing !== undefined;
    const listedSymbols = new Set<string>();
    for (const [a, t] of this.listed) if (a !== address && t.symbol) listedSymbols.add(t.symbol.toLowerCase());
    const { name, symbol, complete: metadataComplete } = meta;
    const spam = isPossibleSpam({ name, symbol, metadataComplete, listed, listedSymbols });
    return { listed, logo: listing?.logoURI ?? null, spam };
  }

  /** Reads metadata of tokens not stored yet (outside any transaction). Addresses without code are skipped. */
  async newTokens(addresses: Iterable<string>): Promise<NewToken[]> {
    const unknown = [...new Set(addresses)].filter((a) => !this.decimals.has(a));
    const read = await mapLimit(unknown, 4, async (address) => ({
      address,
      meta: await readTokenMetadata(this.provider, address),
    }));
    return read
      .filter((r) => r.meta.isContract)
      .map(({ address, meta }) => {
        const { listed, logo, spam } = this.listingOf(address, meta);
        const { name, symbol, decimals, totalSupply } = meta;
        return {
          address,
          name,
          symbol,
          decimals,
          totalSupply,
          metadataOk: meta.complete,
          listed,
          listLogo: logo,
          isPossibleSpam: spam,
        };
      });
  }

  rememberTokens(tokens: NewToken[]): void {
    for (const t of tokens) this.decimals.set(t.address, t.decimals);
  }

  private discover(logs: Log[]): NewPool[] {
    const found: NewPool[] = [];
    for (const log of logs) {
      const factory = log.address.toLowerCase();
      // V2: PairCreated(token0, token1, pair, n); V3: PoolCreated(token0, token1, fee, tickSpacing, pool).
      const v2 = log.topics[0] === TOPICS.pairCreated && this.v2.has(factory);
      if (!v2 && !(log.topics[0] === TOPICS.poolCreated && this.v3.has(factory))) continue;
      const e = (v2 ? v2FactoryAbi : v3FactoryAbi).parseLog(log);
      if (!e) continue;
      found.push({
        address: String(e.args[v2 ? 2 : 4]).toLowerCase(),
        kind: v2 ? 'v2' : 'v3',
        factory,
        token0: String(e.args[0]).toLowerCase(),
        token1: String(e.args[1]).toLowerCase(),
        fee: v2 ? null : Number(e.args[2]),
        createdBlock: log.blockNumber,
      });
    }
    return found.filter((p) => !this.pools.has(p.address) && p.token0 !== p.token1);
  }

  /** Prices after a block: the touched pools' tokens, plus everything quoted in a quote token whose price moved. */
  private reprice(touched: Set<string>, at: Date, block: number): Observation[] {
    const affected = new Set<string>();
    const addTokensOf = (pool: string) => {
      const p = this.pools.get(pool)!;
      affected.add(p.token0);
      affected.add(p.token1);
    };
    for (const a of touched) addTokensOf(a);
    if ([...affected].some((t) => this.oracle.isQuote(t))) {
      const next = this.oracle.quotePrices(this.input, at.getTime());
      for (const q of new Set([...next.keys(), ...this.quotePrices.keys()])) {
        if (next.get(q)?.price === this.quotePrices.get(q)?.price) continue;
        affected.add(q);
        for (const poolAddress of this.poolsByToken.get(q) ?? []) addTokensOf(poolAddress);
      }
      this.quotePrices = next;
    }
    const out: Observation[] = [];
    for (const token of affected) {
      const explained = this.oracle.explain(token, this.input, this.quotePrices, at.getTime());
      if (explained !== undefined) out.push({ token, price: explained.price, at, block, explained });
    }
    return out;
  }

  /** Applies a log to its pool's state (true when the state moved) and records a swap (`net`: swapNet's). */
  private applyPoolLog(
    log: Log,
    pool: PoolState,
    net: [bigint, bigint] | undefined,
    swaps: SwapRow[],
    blockTime: Date,
  ): boolean {
    const topic = log.topics[0];
    if (net && (net[0] !== 0n || net[1] !== 0n)) {
      const token0Sold = net[0] > 0n || (net[0] === 0n && net[1] < 0n);
      swaps.push({
        tx_hash: log.transactionHash.toLowerCase(),
        log_index: log.index,
        block_number: log.blockNumber,
        block_time: blockTime,
        pool: pool.address,
        token_sold: token0Sold ? pool.token0 : pool.token1,
        token_bought: token0Sold ? pool.token1 : pool.token0,
      });
    }
    if (pool.kind === 'v2' && topic === TOPICS.v2Sync) {
      const e = v2PairAbi.parseLog(log)!;
      pool.reserve0 = e.args[0] as bigint;
      pool.reserve1 = e.args[1] as bigint;
    } else if (pool.kind === 'v3' && topic === TOPICS.v3Swap) {
      const e = v3PoolAbi.parseLog(log)!;
      pool.sqrtPriceX96 = e.args[4] as bigint;
      pool.liquidity = e.args[5] as bigint;
    } else return false; // a V2 Swap among them: reserves move with the Sync emitted just before
    pool.stateBlock = log.blockNumber;
    pool.stateTimeMs = blockTime.getTime();
    return true;
  }

  /** Pools the factories created in from..to whose tokens have code, and those tokens not stored yet. */
  private async discoverPools(from: number, to: number) {
    const factories = [...this.v2, ...this.v3];
    const factoryLogs = factories.length
      ? await this.provider.getLogs({
          fromBlock: from,
          toBlock: to,
          address: factories,
          topics: [[TOPICS.pairCreated, TOPICS.poolCreated]],
        })
      : [];
    const newPools = this.discover(factoryLogs);
    const newTokens = await this.newTokens(newPools.flatMap((p) => [p.token0, p.token1]));
    const known = new Set(newTokens.map((t) => t.address));
    // A "pool" whose tokens have no code is not a pool we can price or describe.
    const usable = newPools.filter(
      (p) =>
        (this.decimals.has(p.token0) || known.has(p.token0)) && (this.decimals.has(p.token1) || known.has(p.token1)),
    );
    return { logs: factoryLogs.length, newTokens, usable };
  }

  /** The known pools' logs in from..to in chain order, and the time of each block they are in. */
  private async poolLogs(from: number, to: number): Promise<{ logs: Log[]; times: Map<number, Date> }> {
    const logs = this.pools.size
      ? (
          await this.provider.getLogs({
            fromBlock: from,
            toBlock: to,
            topics: [[TOPICS.v2Swap, TOPICS.v2Sync, TOPICS.v3Swap]],
          })
        ).filter((l) => this.pools.has(l.address.toLowerCase()))
      : [];
    logs.sort((a, b) => a.blockNumber - b.blockNumber || a.index - b.index);
    const blockNumbers = [...new Set(logs.map((l) => l.blockNumber))];
    const blocks = await mapLimit(blockNumbers, 8, async (n) => {
      const b = await this.provider.getBlock(n);
      if (!b) throw new Error(`block ${n} not found`);
      return [n, new Date(b.timestamp * 1000)] as const;
    });
    return { logs, times: new Map(blocks) };
  }

  /** Applies the pool logs to the view block by block, pricing after each block that moved a pool. */
  private replay(logs: Log[], times: Map<number, Date>) {
    const swaps: SwapRow[] = [];
    const volumes: SwapVolume[] = [];
    const observations: Observation[] = [];
    const changed = new Set<string>();
    for (let i = 0; i < logs.length;) {
      const blockNumber = logs[i]!.blockNumber;
      const at = times.get(blockNumber)!;
      const touched = new Set<string>();
      for (; i < logs.length && logs[i]!.blockNumber === blockNumber; i++) {
        const log = logs[i]!;
        const pool = this.pools.get(log.address.toLowerCase())!;
        const net = swapNet(log, pool);
        if (net) volumes.push(...swapVolumes(log, pool, net, this.decimals, at));
        if (this.applyPoolLog(log, pool, net, swaps, at)) {
          touched.add(pool.address);
          changed.add(pool.address);
        }
      }
      if (touched.size) observations.push(...this.reprice(touched, at, blockNumber));
    }
    return { swaps, volumes, observations, changed };
  }

  /** Indexes blocks from..to (inclusive) and moves the cursor to `to`, all or nothing. */
  async runBatch(from: number, to: number): Promise<BatchResult> {
    const discovered = await this.discoverPools(from, to);
    const { newTokens, usable } = discovered;
    this.rememberTokens(newTokens);
    for (const p of usable) this.addPool({ ...p });
    const poolLogs = await this.poolLogs(from, to);
    const { swaps, volumes, observations, changed } = this.replay(poolLogs.logs, poolLogs.times);

    // Not retried here: a failed batch reloads the view and indexes the blocks again (index.ts).
    await this.db.transaction(
      'token_api.index_batch',
      async (trx) => {
        await this.store.insertTokens(trx, newTokens);
        await this.store.insertPools(trx, usable);
        await this.store.savePoolStates(
          trx,
          [...changed].map((a) => this.pools.get(a)!),
        );
        const inserted = await this.store.recordSwaps(trx, swaps);
        await this.store.recordObservations(trx, observations);
        // Volume only from swaps stored now: re-indexed blocks add nothing twice.
        const fresh = volumes.filter((v) => inserted.has(`${v.txHash}:${v.logIndex}`));
        await recordCandles(trx, this.store.schema, observations, swapVolumesUsd(fresh, observations));
        await recordSources(trx, this.store.schema, observations, this.oracle.settings);
        await this.store.setCursor(trx, to);
      },
      { retries: 0 },
    );
    return {
      logs: discovered.logs + poolLogs.logs.length,
      newPools: usable.length,
      newTokens: newTokens.length,
      swaps: swaps.length,
      observations: observations.length,
    };
  }
}
