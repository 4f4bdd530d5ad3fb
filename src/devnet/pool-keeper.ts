import type { Logger } from '../common/log.js';
import { sleep } from '../common/shutdown.js';

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
  let id = 0;
  const rpc = async <T>(method: string, params: unknown[]): Promise<T> => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]),
    });
    const body = (await res.json()) as { result?: T; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };
  type PoolTx = { hash: string; nonce: string };
  type Content = Record<'pending' | 'queued', Record<string, Record<string, PoolTx>>>;

  const release = async (sender: string, pool: Content): Promise<void> => {
    const account = Number(await rpc<string>('eth_getTransactionCount', [sender, 'latest']));
    const queued = pool.queued[sender] ?? {};
    if (!(String(account) in queued) || String(account) in (pool.pending[sender] ?? {})) return;
    const txs = [...Object.values(pool.pending[sender] ?? {}), ...Object.values(queued)].sort(
      (a, b) => Number(a.nonce) - Number(b.nonce),
    );
    const raws = await Promise.all(txs.map((tx) => rpc<string | null>('eth_getRawTransactionByHash', [tx.hash])));
    await rpc('anvil_removePoolTransactions', [sender]);
    for (const raw of raws) if (raw) await rpc('eth_sendRawTransaction', [raw]).catch(() => undefined); // a later nonce may now be refused: the client re-sends it
    logger?.warn(
      { sender, nonce: account, transactions: txs.length },
      "anvil parked a transaction at its sender's nonce; taken out of the pool and sent again",
    );
  };

  return (async () => {
    while (await sleep(intervalMs, signal)) {
      try {
        const status = await rpc<{ queued: string }>('txpool_status', []);
        if (Number(status.queued) === 0) continue;
        const pool = await rpc<Content>('txpool_content', []);
        for (const sender of Object.keys(pool.queued)) await release(sender, pool);
      } catch {
        // the chain is stopping or briefly busy; the next round looks again
      }
    }
  })();
}
