import {
  Transaction,
  Wallet,
  keccak256,
  type JsonRpcProvider,
  type TransactionRequest,
  type TransactionResponse,
} from 'ethers';
import { createProvider } from '../../src/common/chain/provider.js';
import type { DevnetState } from '../../src/devnet/state-file.js';

/** Providers and a signer for one reserved test account on both devnet chains. */
export function devnetSigners(state: DevnetState, accountIndex: number) {
  const l1Provider = createProvider(state.l1.rpcUrl, state.l1.chainId, { pollingInterval: 50 });
  const l2Provider = createProvider(state.l2.upstreamRpcUrl, state.l2.chainId, { pollingInterval: 50 });
  const account = state.accounts[accountIndex]!;
  return {
    account,
    l1Provider,
    l2Provider,
    l1: new Wallet(account.privateKey, l1Provider),
    l2: new Wallet(account.privateKey, l2Provider),
    destroy() {
      l1Provider.destroy();
      l2Provider.destroy();
    },
  };
}

/**
 * Polls until `check` returns a value other than undefined or false, or fails naming what it waited for (`what`; a
 * function is asked when the time is up, so it can say what it saw meanwhile). The one bounded poll of the suite
 * (`l2stack dev`'s, which also watches its process, is in test/e2e/dev-process.ts).
 */
export async function waitFor<T>(
  what: string | (() => string),
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 45_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Sends one sender's signed transactions (consecutive nonces from `firstNonce`) as raw bytes, `perBatch` at a
 * time `pauseMs` apart (each batch mined by evm_mine with `mineEachBatch`), then waits up to `timeoutMs` for the last
 * one's receipt, sending again whatever the node lacks meanwhile (its "already known" answers are ignored): under CI's
 * load anvil has answered a send and kept no such transaction, and every later nonce then waited behind the gap for
 * ever. A transaction anvil parks for good at its sender's nonce is released by the pool keeper every startAnvil runs
 * (pool-keeper.ts).
 */
export async function sendRawBurst(
  provider: JsonRpcProvider,
  sender: string,
  firstNonce: number,
  raws: string[],
  options: { perBatch?: number; pauseMs?: number; timeoutMs?: number; mineEachBatch?: boolean } = {},
): Promise<void> {
  const perBatch = options.perBatch ?? raws.length;
  for (let i = 0; i < raws.length; i += perBatch) {
    await Promise.all(raws.slice(i, i + perBatch).map((raw) => provider.send('eth_sendRawTransaction', [raw])));
    // A node with automine off (evm_setAutomine false) gets one block per batch, mined here.
    if (options.mineEachBatch) await provider.send('evm_mine', []);
    if (options.pauseMs && i + perBatch < raws.length) await new Promise((r) => setTimeout(r, options.pauseMs));
  }
  const lastHash = keccak256(raws.at(-1)!);
  let minedBefore = -1;
  // What the node said to the re-sends and the mining, kept for the timeout's message (distinct answers only).
  const answers = new Set<string>();
  const note = (what: string) => (err: unknown) => void answers.add(`${what}: ${(err as Error).message.slice(0, 160)}`);
  await waitFor(
    `the last of ${raws.length} transactions to be mined`,
    async () => {
      if (await provider.send('eth_getTransactionReceipt', [lastHash])) return true;
      const mined = await provider.getTransactionCount(sender, 'latest');
      const missing = raws.slice(Math.max(0, mined - firstNonce));
      await Promise.all(
        missing.map((raw) =>
          provider.send('eth_sendRawTransaction', [raw]).catch((err: unknown) => {
            if (!/already known|already imported/i.test((err as Error).message)) note('eth_sendRawTransaction')(err);
          }),
        ),
      );
      // No progress for a whole second: anvil's automine has also stopped with a full pool under CI's load (6 of 200
      // mined, the rest pending for 120 s). A mined block takes what is pending; a node without evm_mine refuses it.
      if (mined === minedBefore) await provider.send('evm_mine', []).catch(note('evm_mine'));
      minedBefore = mined;
      return undefined;
    },
    options.timeoutMs ?? 120_000,
    1_000,
  ).catch(async (err: Error) => {
    // Say how far it got and what the node holds, so a stall can be told from a lost transaction.
    const state = await Promise.all([
      provider.getTransactionCount(sender, 'latest'),
      provider.getTransactionCount(sender, 'pending'),
      provider.getBlockNumber(),
      provider.send('txpool_status', []).catch((e: Error) => e.message),
    ]).then(
      ([latest, pending, head, pool]) =>
        `${latest - firstNonce} of ${raws.length} mined, ${pending - latest} pending at the node, head ${head}, txpool ${JSON.stringify(pool)}`,
      (e: Error) => `the node did not answer: ${e.message}`,
    );
    throw new Error(`${err.message}: ${state}; node answers: ${[...answers].join(' | ') || 'none'}`, { cause: err });
  });
}

/**
 * A wallet whose sendTransaction returns only once its transaction is mined, broadcasting the same signed
 * bytes again every `resendEveryMs` while the node has no receipt, and failing after `timeoutMs` naming the
 * transaction. Under CI's load anvil has acknowledged a send and kept nothing (see sendRawBurst); a signer
 * that sends once (and ethers' JsonRpcSigner, which then polls for the transaction with no bound) waits for
 * ever on it.
 */
export class ResendingWallet extends Wallet {
  constructor(
    privateKey: string,
    provider: JsonRpcProvider,
    private readonly bounds = { resendEveryMs: 2_000, timeoutMs: 60_000 },
  ) {
    super(privateKey, provider);
  }

  override async sendTransaction(request: TransactionRequest): Promise<TransactionResponse> {
    const provider = this.provider as JsonRpcProvider;
    const populated = await this.populateTransaction(request);
    delete populated.from;
    const raw = await this.signTransaction(Transaction.from(populated));
    const response = await provider.broadcastTransaction(raw);
    const started = Date.now();
    let sentAt = started;
    for (;;) {
      if (await provider.send('eth_getTransactionReceipt', [response.hash])) return response;
      const now = Date.now();
      if (now - started > this.bounds.timeoutMs) {
        throw new Error(
          `transaction ${response.hash} (nonce ${response.nonce}) not mined after ${this.bounds.timeoutMs} ms`,
        );
      }
      if (now - sentAt >= this.bounds.resendEveryMs) {
        sentAt = now;
        await provider.send('eth_sendRawTransaction', [raw]).catch(() => undefined); // "already known" is fine
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
