/**
 * Shows that anvil's automine answers a send before it has mined it (issue 37): each of N transfers is followed,
 * as soon as eth_sendTransaction answers, by eth_getTransactionReceipt, and the absent receipts are counted. A test
 * that reads a receipt (or runs one receipts step) right after a send under automine races anvil's miner; wait with a
 * bound instead (or mine with evm_mine, which answers once the block exists). Usage:
 *
 *   npx tsx scripts/repro/anvil-automine-receipt.ts [sends=300]
 */
import { devAccounts } from '../../src/devnet/accounts.js';
import { startAnvil } from '../../src/devnet/anvil.js';

const sends = Number(process.argv[2] ?? 300);
const anvil = await startAnvil({ port: 0, chainId: 31_996, accounts: 1 });
const call = async (method: string, params: unknown[]): Promise<unknown> => {
  const res = await fetch(anvil.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result: unknown }).result;
};
const from = devAccounts(1)[0]!.address;
let absent = 0;
try {
  for (let i = 0; i < sends; i++) {
    const hash = await call('eth_sendTransaction', [{ from, to: from, value: '0x1' }]);
    if ((await call('eth_getTransactionReceipt', [hash])) === null) absent++;
  }
  console.log(`receipt absent right after the send's answer: ${absent} of ${sends} sends (automine)`);
} finally {
  await anvil.stop();
}
