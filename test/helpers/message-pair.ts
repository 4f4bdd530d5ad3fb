import { Wallet, parseEther, type JsonRpcProvider } from 'ethers';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { L1MessageService__factory, L2MessageService__factory } from '../../generated/contracts/types/index.js';

/** An L1 and an L2 anvil of a test's own, each with its message service. */
export interface MessagePair {
  l1: Anvil;
  l2: Anvil;
  p1: JsonRpcProvider;
  p2: JsonRpcProvider;
  l1Service: string;
  l2Service: string;
  stop(): Promise<void>;
}

/**
 * Two anvils (chain ids `ids`, on `ports` or free ones, genesis at `genesisTimestamp`) with the message services
 * deployed by `deployerKey` at nonce 0: the same addresses on every pair, so a pair started again on the same
 * ports and ids differs from the first only by its genesis.
 */
export async function startMessagePair(o: {
  ids: [number, number];
  deployerKey: string;
  genesisTimestamp: number;
  ports?: [number, number];
}): Promise<MessagePair> {
  const ports = o.ports ?? [0, 0];
  const [l1, l2] = await Promise.all(
    o.ids.map((chainId, i) => startAnvil({ port: ports[i]!, chainId, timestamp: o.genesisTimestamp })),
  );
  const p1 = createProvider(l1!.url, l1!.chainId, { pollingInterval: 50 });
  const p2 = createProvider(l2!.url, l2!.chainId, { pollingInterval: 50 });
  const d1 = new Wallet(o.deployerKey, p1);
  const d2 = new Wallet(o.deployerKey, p2);
  const s1 = await new L1MessageService__factory(d1).deploy(d1.address, 86_400, parseEther('10000'));
  const s2 = await new L2MessageService__factory(d2).deploy(d2.address, 0n);
  await Promise.all([s1.waitForDeployment(), s2.waitForDeployment()]);
  const l2Service = await s2.getAddress();
  await p2.send('anvil_setBalance', [l2Service, `0x${parseEther('1000').toString(16)}`]);
  return {
    l1: l1!,
    l2: l2!,
    p1,
    p2,
    l1Service: (await s1.getAddress()).toLowerCase(),
    l2Service: l2Service.toLowerCase(),
    async stop() {
      p1.destroy();
      p2.destroy();
      await Promise.all([l1!.stop(), l2!.stop()]);
    },
  };
}
