import { Transaction } from 'ethers';

/**
 * Why bytes given to eth_sendRawTransaction are not a signed transaction (undefined when they are one):
 * a legacy RLP list or an EIP-2718 typed envelope (types 1, 2, 3 with or without its blob sidecar, 4) that
 * decodes completely and carries a signature. A node refuses anything else ("Failed to decode
 * transaction"), so it never needs to see it; whether the transaction is acceptable (nonce, funds, fees,
 * chain id) is still the node's decision.
 */
export function rawTransactionProblem(raw: string): string | undefined {
  if (raw === '0x') return 'empty: expected a signed transaction';
  let tx: Transaction;
  try {
    tx = Transaction.from(raw);
  } catch (err) {
    const short = (err as { shortMessage?: string }).shortMessage ?? (err as Error).message;
    return `not a signed transaction (${short.slice(0, 120)})`;
  }
  if (!tx.signature) return 'not a signed transaction (no signature)';
  return undefined;
}
