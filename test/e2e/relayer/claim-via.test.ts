import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Wallet, parseEther, type JsonRpcProvider } from 'ethers';
import { openTestDb } from '../../helpers/db.js';
import { ClaimForwarder__factory } from '../../../generated/contracts/types/index.js';
import { loadRelayerConfig } from '../../../src/relayer/config.js';
import { l1Interface, l2Interface } from '../../../src/relayer/chain.js';
import { startRelayer, type Relayer } from '../../../src/relayer/index.js';
import { testCommon } from './harness.js';
import { keys, useSharedDevnet, waitClaimed, type SharedRelayerDevnet } from './shared-devnet.js';

/**
 * L1_CLAIM_VIA_ADDRESS / L2_CLAIM_VIA_ADDRESS on the shared devnet: claims in both directions are sent to
 * the devnet's ClaimForwarder of the destination chain, which passes them to the message service, and
 * the fee is paid to the relayer (named as fee recipient), not to the forwarder.
 */
const state = inject('devnet');
const forwarder = ClaimForwarder__factory.createInterface();
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let d: SharedRelayerDevnet;
let relayer: Relayer | undefined;
let schema: string;

beforeAll(async () => {
  testDb = await openTestDb();
  schema = testDb.schema('relayer');
  // A sender of this file's own (accounts 10..19 belong to other files), funded on both chains.
  const own = Wallet.createRandom();
  const s = {
    ...state,
    accounts: [...state.accounts, { address: own.address, privateKey: own.privateKey, role: 'test' as const }],
  };
  d = await useSharedDevnet(s, s.accounts.length - 1);
  for (const p of [d.l1, d.l2]) await p.send('anvil_setBalance', [own.address, `0x${parseEther('100').toString(16)}`]);
});

afterAll(async () => {
  await relayer?.stop();
  d?.destroy();
  await testDb?.close();
});

describe('claiming through a claim-via contract', () => {
  it(
    'behavior: claims in both directions go to the ClaimForwarder, each message is claimed once, and the fee reaches the relayer, not the forwarder',
    { timeout: 120_000 },
    async () => {
      const via = state.claimForwarder!;
      const before = { l1: await d.l1.getBalance(d.relayerAddress), l2: await d.l2.getBalance(d.relayerAddress) };
      const config = loadRelayerConfig(d.env({ L1_CLAIM_VIA_ADDRESS: via.l1, L2_CLAIM_VIA_ADDRESS: via.l2 }));
      relayer = await startRelayer({
        common: testCommon(),
        db: testDb.client,
        config: { ...config, api: { ...config.api, port: 0 } },
        schema,
      });
      const sent = { l1: await d.send('l1', 2), l2: await d.send('l2', 2) };
      const got = await waitClaimed(testDb.client, schema, sent);
      expect(keys(sent).map((k) => got.get(k)?.status)).toEqual(keys(sent).map(() => 'CLAIMED_SUCCESS'));
      expect(keys(sent).map((k) => got.get(k)?.pendings)).toEqual(keys(sent).map(() => 1));

      // Claims of L1 messages are mined on L2 and the other way round.
      const checks: {
        layer: 'l1' | 'l2';
        provider: JsonRpcProvider;
        via: string;
        service: string;
        iface: typeof l1Interface;
      }[] = [
        { layer: 'l1', provider: d.l2, via: via.l2, service: state.l2.messageService, iface: l2Interface },
        { layer: 'l2', provider: d.l1, via: via.l1, service: state.l1.messageService, iface: l1Interface },
      ];
      for (const { layer, provider, via: address, service, iface } of checks) {
        const direction = layer === 'l1' ? 'L1_TO_L2' : 'L2_TO_L1';
        let fees = 0n;
        let gasCost = 0n;
        for (const hash of sent[layer]) {
          const claim = got.get(`${direction}:${hash}`)!.claim_tx_hash!;
          const tx = (await provider.getTransaction(claim))!;
          const receipt = (await provider.getTransactionReceipt(claim))!;
          expect([tx.from.toLowerCase(), tx.to!.toLowerCase(), receipt.status]).toEqual([
            d.relayerAddress,
            address.toLowerCase(),
            1,
          ]);
          // The forwarder's event names the relayer as caller; the service's MessageClaimed is for this message.
          const forwarded = receipt.logs
            .filter((l) => l.address.toLowerCase() === address.toLowerCase())
            .map((l) => forwarder.parseLog(l)!);
          expect(forwarded.map((f) => [f.name, String(f.args.caller).toLowerCase()])).toEqual([
            ['Forwarded', d.relayerAddress],
          ]);
          const claimed = receipt.logs
            .filter((l) => l.address.toLowerCase() === service.toLowerCase())
            .map((l) => iface.parseLog(l)!)
            .filter((p) => p.name === 'MessageClaimed');
          expect(claimed.map((p) => String(p.args._messageHash).toLowerCase())).toEqual([hash]);
          fees += parseEther('0.01');
          gasCost += receipt.gasUsed * receipt.gasPrice;
        }
        // The relayer's only transactions on this chain are these claims: it gained exactly the fees minus gas.
        const after = await provider.getBalance(d.relayerAddress);
        expect(after - before[layer === 'l1' ? 'l2' : 'l1']).toBe(fees - gasCost);
        expect(await provider.getBalance(address)).toBe(0n);
        const events = await d.claimEvents(layer, sent[layer]);
        expect([...events.values()]).toEqual(sent[layer].map(() => 1));
      }
    },
  );
});
