import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Transaction, Wallet } from 'ethers';
import { useClaimChain, type ClaimChain } from './claim-chain.js';
import { startTxProxy, type TxProxy } from './tx-proxy.js';
import { ForeignChainTransactionError } from '../../src/relayer/broadcast-errors.js';
import { signedChainId } from '../../src/relayer/tx-chain-id.js';

/**
 * A stored signed claim of another chain (issue 23 item 4, the guard per transaction behind the chain pin): the
 * receipt loop neither rebroadcasts it nor bumps or cancels it (which would sign its calldata anew for this chain),
 * logs one error and records the reason; the sender's broadcast refuses it outright. Every transaction the relayer
 * sends goes through a proxy that counts them, on a real anvil.
 */
let c: ClaimChain;
const fixture = useClaimChain();
let proxy: TxProxy;
const sent: Transaction[] = [];
beforeAll(async () => {
  c = fixture.chain;
  proxy = await startTxProxy(c.anvil.url, (tx) => (sent.push(tx), false));
});
afterAll(async () => {
  await proxy?.close();
});

describe('a stored claim signed for another chain', () => {
  it(
    'behavior: never sent, not bumped, one error line, reason recorded; broadcast() refuses it',
    { timeout: 60_000 },
    async () => {
      // A 1 s submission timeout: without the guard the receipt loop would bump or rebroadcast within these iterations.
      const p = await c.pipeline({ L2_RPC_URL: proxy.url, MESSAGE_SUBMISSION_TIMEOUT: '1000' });
      const [m] = await c.addMessages(1);
      await c.rpc('evm_setAutomine', [false]);
      await p.claim();
      const ours = await c.row(m!.id);
      expect(ours.status).toBe('PENDING');
      expect(signedChainId(ours.claim_tx_raw!)).toBe(BigInt(c.anvil.chainId));
      // The row now holds the same claim signed for another chain id (as a database of other chains would), and the
      // node's pool has nothing of ours: the claim looks lost at the lowest nonce, the case that rebroadcasts first.
      const own = Transaction.from(ours.claim_tx_raw!);
      const foreignId = BigInt(c.anvil.chainId) + 1_000n;
      const foreign = await new Wallet(c.relayerKey).signTransaction({
        type: 2,
        chainId: foreignId,
        nonce: own.nonce,
        to: own.to,
        data: own.data,
        value: 0n,
        gasLimit: own.gasLimit,
        maxFeePerGas: own.maxFeePerGas,
        maxPriorityFeePerGas: own.maxPriorityFeePerGas,
      });
      expect(signedChainId(foreign)).toBe(foreignId);
      const foreignHash = Transaction.from(foreign).hash!;
      await c.rpc('anvil_dropAllTransactions');
      await c.db(m!.id, {
        claim_tx_raw: foreign,
        claim_tx_hash: foreignHash,
        claim_tx_created_at: new Date(Date.now() - 60_000),
      });
      const sendsBefore = proxy.calls('eth_sendRawTransaction');
      const nonceBefore = await c.provider.getTransactionCount(c.relayerAddress, 'pending');

      for (let i = 0; i < 8; i++) {
        await p.receipts();
        await new Promise((r) => setTimeout(r, 150));
      }
      expect(proxy.calls('eth_sendRawTransaction')).toBe(sendsBefore);
      expect(await c.provider.getTransactionCount(c.relayerAddress, 'pending')).toBe(nonceBefore);
      const after = await c.row(m!.id);
      expect([after.status, after.claim_tx_hash, after.bumps]).toEqual(['PENDING', foreignHash, 0]);
      expect(after.failure_reason).toBe(
        `claim ${foreignHash} not sent: it was signed for chain id ${foreignId}, the destination is chain id ${c.anvil.chainId}; stop the relayer and check the chains (see reset-chain-pin)`,
      );
      const errors = c.logLines.filter(
        (l) => l.includes(foreignHash) && (JSON.parse(l) as { level: number }).level >= 50,
      );
      expect(errors).toHaveLength(1);

      // The last gate: whatever path asks, the sender does not send it (nor a transaction signed with no chain id).
      await expect(p.ctx.sender.broadcast(foreign)).rejects.toBeInstanceOf(ForeignChainTransactionError);
      const legacy = await new Wallet(c.relayerKey).signTransaction({
        type: 0,
        nonce: own.nonce,
        to: own.to,
        data: own.data,
        gasLimit: own.gasLimit,
        gasPrice: own.maxFeePerGas,
      });
      expect(signedChainId(legacy)).toBeUndefined();
      await expect(p.ctx.sender.broadcast(legacy)).rejects.toThrow(/signed without a chain id/);
      expect(proxy.calls('eth_sendRawTransaction')).toBe(sendsBefore);
      // Its own chain's transactions still go through the same gate.
      await p.ctx.sender.broadcast(ours.claim_tx_raw!);
      expect(proxy.calls('eth_sendRawTransaction')).toBe(sendsBefore + 1);
      await c.rpc('evm_setAutomine', [true]);
    },
  );
});
