import type { TransactionReceipt, TransactionResponse } from 'ethers';
import { BaseError } from '../errors.js';

/** The transaction was not mined in time, or was mined and reverted. */
export class TransactionNotMinedError extends BaseError {
  override name = 'TransactionNotMinedError';
}

const POLL_MS = 25;
const DEFAULT_TIMEOUT_MS = 120_000;

/**
 * Waits for a sent transaction's receipt by asking for it directly, every POLL_MS until `timeoutMs`, and
 * refuses a reverted one. Why not ethers' `tx.wait()`: it looks for the receipt once, then waits for the
 * *next* block after its block poller's first reading. anvil answers eth_sendRawTransaction before its
 * automine has sealed the block, so a transaction mined between those two reads is never seen again when no
 * later block comes (the devnet's start-up hung for minutes on an idle L2 that way). This has no such window
 * and names the transaction when it gives up.
 */
export async function mined(
  sent: TransactionResponse | Promise<TransactionResponse>,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<TransactionReceipt> {
  const tx = await sent;
  const provider = tx.provider;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const receipt = await provider.getTransactionReceipt(tx.hash);
    if (receipt) {
      if (receipt.status !== 1)
        throw new TransactionNotMinedError(
          `transaction ${tx.hash} (nonce ${tx.nonce} from ${tx.from}) reverted in block ${receipt.blockNumber}`,
        );
      return receipt;
    }
    if (Date.now() > deadline)
      throw new TransactionNotMinedError(
        `transaction ${tx.hash} (nonce ${tx.nonce} from ${tx.from}) not mined within ${timeoutMs} ms`,
      );
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
