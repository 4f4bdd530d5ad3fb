import { Transaction, type AccessList } from 'ethers';
import type { Logger } from '../common/log.js';
import { sleep } from '../common/shutdown.js';

type PoolTx = Record<
  'hash' | 'nonce' | 'type' | 'chainId' | 'gas' | 'to' | 'value' | 'input' | 'r' | 's' | 'v',
  string
> &
  Partial<Record<'gasPrice' | 'maxFeePerGas' | 'maxPriorityFeePerGas', string>> & { accessList?: AccessList };
type Content = Record<'pending' | 'queued', Record<string, Record<string, PoolTx>>>;

/** A pool transaction's signed bytes from txpool_content's fields; undefined when they do not give its hash back. */
function signedBytes(tx: PoolTx): string | undefined {
  try {
    const t = Transaction.from({
      type: Number(tx.type),
      chainId: tx.chainId,
      nonce: Number(tx.nonce),
      gasLimit: tx.gas,
      gasPrice: tx.gasPrice,
      maxFeePerGas: tx.maxFeePerGas,
      maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
      to: tx.to,
      value: tx.value,
      data: tx.input,
      accessList: tx.accessList,
      signature: { r: tx.r, s: tx.s, v: tx.v },
    });
    return t.hash === tx.hash ? t.serialized : undefined;
  } catch {
    return undefined;
  }
}

/**
 * JSON-RPC calls to a chain in one request (a batch), answers in their order; throws on an error or a lack of answer.
 */
export async function chainCalls(url: string, calls: [string, unknown[]][], signal?: AbortSignal): Promise<unknown[]> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map(([method, params], id) => ({ jsonrpc: '2.0', id, method, params }))),
    signal,
  });
  const body = (await res.json()) as { id: number; result?: unknown; error?: { message: string } }[];
  return calls.map(([method], i) => {
    const answer = body.find((b) => b.id === i);
    if (!answer || answer.error) throw new Error(`${method}: ${answer?.error?.message ?? 'no answer'}`);
    return answer.result;
  });
}

/**
 * Releases transactions anvil has parked for good. anvil reads a sender's nonce when a raw transaction arrives
 * and, for a nonce above it, makes the transaction wait for the one before it (a pool "marker"). When that one
 * is mined between the read and the transaction's entry into the pool, the marker is already gone and nothing
 * will release the wait: the transaction sits "queued" with a nonce equal to its sender's, a re-send answers
 * "already imported", and every later nonce of that sender waits behind it (foundry 1.x,
 * crates/anvil/src/eth/api.rs `required_marker`, eth/pool `prune_markers`; scripts/repro/anvil-parked-nonce.ts
 * reproduces it). Consecutive nonces sent at once meet it: test bursts, the relayer's claims, a wallet's batch.
 *
 * Every `intervalMs`, while anvil holds queued transactions, any sender whose lowest queued nonce is its account
 * nonce has its transactions taken out of the pool (anvil_removePoolTransactions) and sent again in nonce order,
 * each then read against the nonce of now. Nothing else is touched: a nonce gap a client made stays queued.
 */
export function keepPool(url: string, intervalMs: number, signal: AbortSignal, logger?: Logger): Promise<void> {
  const rpc = (calls: [string, unknown[]][]) =>
    chainCalls(url, calls, AbortSignal.any([signal, AbortSignal.timeout(10_000)]));
  const call = async <T>(method: string, params: unknown[]) => (await rpc([[method, params]]))[0] as T;

  const release = async (sender: string, pool: Content): Promise<void> => {
    const account = Number(await call<string>('eth_getTransactionCount', [sender, 'latest']));
    const queued = pool.queued[sender] ?? {};
    if (!(String(account) in queued) || String(account) in (pool.pending[sender] ?? {})) return;
    // Read and removed in one request: removing after a read of its own also took the transactions that arrived in
    // between, which were never sent again (seen under load: the sender's later nonces then waited for ever).
    // anvil_dropTransaction would spare them, but it takes no queued transaction. The signed bytes of those already
    // seen are read in the same request (any type); one that arrived since is rebuilt from the pool's fields.
    const seen = [...Object.values(pool.pending[sender] ?? {}), ...Object.values(queued)].map((tx) => tx.hash);
    const [now, ...raws] = (await rpc([
      ['txpool_content', []],
      ...seen.map((hash): [string, unknown[]] => ['eth_getRawTransactionByHash', [hash]]),
      ['anvil_removePoolTransactions', [sender]],
    ])) as [Content, ...(string | null)[]];
    const rawOf = new Map(seen.map((hash, i) => [hash, raws[i]]));
    const txs = [...Object.values(now.pending[sender] ?? {}), ...Object.values(now.queued[sender] ?? {})].sort(
      (a, b) => Number(a.nonce) - Number(b.nonce),
    );
    for (const tx of txs) {
      const raw = rawOf.get(tx.hash) ?? signedBytes(tx);
      // a later nonce may now be refused: the client re-sends it
      if (raw) await call('eth_sendRawTransaction', [raw]).catch(() => undefined);
      else
        logger?.error({ sender, hash: tx.hash, type: tx.type }, 'the pool keeper could not send a transaction again');
    }
    logger?.warn(
      { sender, nonce: account, transactions: txs.length },
      "anvil parked a transaction at its sender's nonce; taken out of the pool and sent again",
    );
  };

  return everyInterval(intervalMs, signal, async () => {
    const status = await call<{ queued: string }>('txpool_status', []);
    if (Number(status.queued) === 0) return;
    const pool = await call<Content>('txpool_content', []);
    for (const sender of Object.keys(pool.queued)) await release(sender, pool);
  });
}

/**
 * `round` every `intervalMs` until `signal` aborts. A round that fails (the chain is stopping or briefly busy)
 * is left to the next one.
 */
export async function everyInterval(intervalMs: number, signal: AbortSignal, round: () => Promise<unknown>) {
  while (await sleep(intervalMs, signal)) await round().catch(() => undefined);
}
