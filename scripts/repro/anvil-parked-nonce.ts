/**
 * Reproduces anvil's parked-nonce race (issue 37): consecutive nonces of one sender sent at once, so that one is
 * mined between anvil's reading of the sender's nonce for the next and the next's entry into the pool. That next
 * transaction then waits for a marker nothing will provide: it stays "queued" with a nonce equal to the account's,
 * and sending it again answers "already imported". Usage:
 *
 *   npx tsx scripts/repro/anvil-parked-nonce.ts [rounds=300] [burst=3] [senders=4] [keeper=off|on]
 *
 * Run it beside CPU load (e.g. `taskset -c 0 npx tsx ...` with a busy loop on core 0) to make the window wider.
 * It prints how many rounds left a transaction parked: with keeper=off those stay parked (counted after 2 s);
 * with keeper=on (the devnet's default, src/devnet/pool-keeper.ts) each must be mined.
 */
import { Wallet, keccak256 } from 'ethers';
import { createProvider } from '../../src/common/chain/provider.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { startAnvil } from '../../src/devnet/anvil.js';

const [rounds = 300, burst = 3, senders = 4] = process.argv.slice(2, 5).map(Number);
const keeper = process.argv[5] === 'on';
const chainId = 31_997;
const anvil = await startAnvil({ port: 0, chainId, accounts: senders, poolKeeperMs: keeper ? 500 : 0 });
const provider = createProvider(anvil.url, chainId, { pollingInterval: 50 });
const wallets = devAccounts(senders).map((a) => new Wallet(a.privateKey, provider));
const fees = await provider.getFeeData();
let parked = 0;
let sent = 0;
const started = Date.now();
try {
  for (let round = 0; round < rounds; round++) {
    await Promise.all(
      wallets.map(async (w) => {
        const nonce = await provider.getTransactionCount(w.address, 'pending');
        const raws = await Promise.all(
          Array.from({ length: burst }, (_, i) =>
            w.signTransaction({
              type: 2,
              chainId,
              nonce: nonce + i,
              to: w.address,
              value: 1n,
              gasLimit: 21_000,
              maxFeePerGas: fees.maxFeePerGas,
              maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
            }),
          ),
        );
        await Promise.all(raws.map((raw) => provider.send('eth_sendRawTransaction', [raw])));
        sent += raws.length;
        const last = keccak256(raws.at(-1)!);
        for (const deadline = Date.now() + 2_000; Date.now() < deadline;) {
          if (await provider.send('eth_getTransactionReceipt', [last])) return;
          await new Promise((r) => setTimeout(r, 20));
        }
        const mined = await provider.getTransactionCount(w.address, 'latest');
        const pool = await provider.send('txpool_content', []);
        const queued = Object.keys(pool.queued?.[w.address] ?? pool.queued?.[w.address.toLowerCase()] ?? {}).map(
          Number,
        );
        if (!queued.includes(mined))
          throw new Error(
            `round ${round}: ${w.address} stalled at nonce ${mined} without a parked transaction (queued ${queued.join(',')})`,
          );
        parked++;
        console.log(`round ${round}: ${w.address} parked at nonce ${mined} (${mined - nonce} of ${burst} mined)`);
        // Out of the pool, so the next round starts clean.
        await provider.send('anvil_removePoolTransactions', [w.address]);
      }),
    );
  }
} finally {
  console.log(
    `keeper ${keeper ? 'on' : 'off'}: ${rounds} rounds × ${senders} senders × ${burst}, ${sent} transactions sent, ${parked} parked for good, ${Date.now() - started} ms`,
  );
  provider.destroy();
  await anvil.stop();
}
