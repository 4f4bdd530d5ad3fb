import { Wallet, id, keccak256, parseEther, type JsonRpcProvider } from 'ethers';
import { createProvider } from '../../../src/common/chain/provider.js';
import type { DbClient } from '../../../src/common/db/client.js';
import type { DevnetState } from '../../../src/devnet/state-file.js';
import { L1MessageService__factory, L2MessageService__factory } from '../../../generated/contracts/types/index.js';
import { FAST_LISTENER } from './harness.js';
import { sendRawBurst } from '../../helpers/chain.js';

/**
 * How long a burst of messages may take to be mined (sent again meanwhile): anvil mines each at once; a loaded CI
 * machine took seconds.
 */
const SEND_RECEIPT_MS = 60_000;

/**
 * Relayer tests on the shared e2e devnet (inject('devnet')). Each file uses its own test account as
 * message sender (17..19) and a fresh relayer key funded on both chains, and relays only its sender's
 * messages (the FROM_ADDRESS filters), so files never touch each other's messages or nonces.
 */
export interface SharedRelayerDevnet {
  state: DevnetState;
  l1: JsonRpcProvider;
  l2: JsonRpcProvider;
  sender: { l1: Wallet; l2: Wallet };
  relayerKey: string;
  relayerAddress: string;
  /** Blocks at set-up: the relayer starts listening there, claim events are counted from there. */
  from: { l1: number; l2: number };
  env(overrides?: Record<string, string>): Record<string, string>;
  /** Sends `count` fee-paying messages from the sender on `layer` (one block); returns their hashes. */
  send(layer: 'l1' | 'l2', count: number): Promise<string[]>;
  /** MessageClaimed events per message hash on the destination of `layer`'s messages. */
  claimEvents(layer: 'l1' | 'l2', hashes: string[]): Promise<Map<string, number>>;
  destroy(): void;
}

/** `account`: a reserved test account (17..19), or 'random' for a fresh sender funded on both chains. */
export async function useSharedDevnet(state: DevnetState, account: number | 'random'): Promise<SharedRelayerDevnet> {
  const l1 = createProvider(state.l1.rpcUrl, state.l1.chainId, { pollingInterval: 100 });
  const l2 = createProvider(state.l2.upstreamRpcUrl, state.l2.chainId, { pollingInterval: 100 });
  const relayer = Wallet.createRandom();
  const fresh = account === 'random' ? Wallet.createRandom() : undefined;
  for (const p of [l1, l2]) {
    for (const w of fresh ? [relayer, fresh] : [relayer])
      await p.send('anvil_setBalance', [w.address, `0x${parseEther('1000').toString(16)}`]);
  }
  const key = fresh ? fresh.privateKey : state.accounts[account as number]!.privateKey;
  const sender = { l1: new Wallet(key, l1), l2: new Wallet(key, l2) };
  const from = { l1: await l1.getBlockNumber(), l2: await l2.getBlockNumber() };
  const user = Wallet.createRandom().address;
  const fee = parseEther('0.01');
  return {
    state,
    l1,
    l2,
    sender,
    relayerKey: relayer.privateKey,
    relayerAddress: relayer.address.toLowerCase(),
    from,
    env: (overrides = {}) => ({
      L1_L2_AUTO_CLAIM_ENABLED: 'true',
      L2_L1_AUTO_CLAIM_ENABLED: 'true',
      DB_CLEANER_ENABLED: 'false',
      L1_CONTRACT_ADDRESS: state.l1.messageService,
      L2_CONTRACT_ADDRESS: state.l2.messageService,
      L1_RPC_URL: state.l1.rpcUrl,
      L2_RPC_URL: state.l2.upstreamRpcUrl,
      L1_SIGNER_TYPE: 'private-key',
      L2_SIGNER_TYPE: 'private-key',
      L1_SIGNER_PRIVATE_KEY: relayer.privateKey,
      L2_SIGNER_PRIVATE_KEY: relayer.privateKey,
      L1_L2_EOA_ENABLED: 'true',
      L2_L1_EOA_ENABLED: 'true',
      L1_EVENT_FILTER_FROM_ADDRESS: sender.l1.address.toLowerCase(),
      L2_EVENT_FILTER_FROM_ADDRESS: sender.l2.address.toLowerCase(),
      L1_LISTENER_INITIAL_FROM_BLOCK: String(from.l1),
      L2_LISTENER_INITIAL_FROM_BLOCK: String(from.l2),
      ...FAST_LISTENER,
      L2_MESSAGE_TREE_DEPTH: String(state.messageTreeDepth),
      ...overrides,
    }),
    async send(layer, count) {
      const w = sender[layer];
      const contract =
        layer === 'l1'
          ? L1MessageService__factory.connect(state.l1.messageService, w)
          : L2MessageService__factory.connect(state.l2.messageService, w);
      const provider = w.provider as JsonRpcProvider;
      const [nonce, fees, gas] = await Promise.all([
        w.getNonce('pending'),
        provider.getFeeData(),
        contract.sendMessage.estimateGas(user, fee, '0x', { value: fee + 1n }),
      ]);
      // Signed here and sent as raw bytes by sendRawBurst, which sends again whatever the node lacks: under CI's load
      // anvil has acknowledged a send and kept nothing, and every later nonce then waited behind the gap for ever.
      const raws = await Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const tx = await contract.sendMessage.populateTransaction(user, fee, '0x', {
            value: fee + BigInt(layer === 'l1' ? 1_000 + i : 2_000 + i),
          });
          return w.signTransaction({
            ...tx,
            type: 2,
            chainId: layer === 'l1' ? state.l1.chainId : state.l2.chainId,
            nonce: nonce + i,
            gasLimit: (gas * 3n) / 2n,
            maxFeePerGas: fees.maxFeePerGas,
            maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
          });
        }),
      );
      await sendRawBurst(provider, w.address, nonce, raws, { timeoutMs: SEND_RECEIPT_MS });
      const hashes: string[] = [];
      for (const raw of raws) {
        const receipt = await provider.getTransactionReceipt(keccak256(raw));
        if (!receipt || receipt.status !== 1)
          throw new Error(
            `${layer} message transaction ${keccak256(raw)}: ${receipt ? 'reverted' : 'no receipt'} after the burst was mined`,
          );
        for (const log of receipt.logs) {
          const parsed = contract.interface.parseLog(log);
          if (parsed?.name === 'MessageSent') hashes.push(String(parsed.args._messageHash).toLowerCase());
        }
      }
      return hashes;
    },
    async claimEvents(layer, hashes) {
      const [provider, address, fromBlock] =
        layer === 'l1' ? [l2, state.l2.messageService, from.l2] : [l1, state.l1.messageService, from.l1];
      const logs = await provider.getLogs({ address, topics: [id('MessageClaimed(bytes32)')], fromBlock });
      const counts = new Map(hashes.map((h) => [h, 0]));
      for (const l of logs) {
        const h = l.topics[1]!.toLowerCase();
        if (counts.has(h)) counts.set(h, counts.get(h)! + 1);
      }
      return counts;
    },
    destroy() {
      l1.destroy();
      l2.destroy();
    },
  };
}

export type Sent = { l1: string[]; l2: string[] };
export interface Claimed {
  status: string;
  pendings: number;
  claim_tx_hash: string | null;
}

/**
 * Statuses of the given messages (L1 hashes are L1_TO_L2, L2 hashes L2_TO_L1) in the relayer's tables, by
 * "direction:hash".
 */
export async function statuses(db: DbClient, schema: string, sent: Sent): Promise<Map<string, Claimed>> {
  const rows = await db.query('test.shared_devnet', (knex) =>
    knex(`${schema}.message as m`)
      .where((w) => w.where('m.direction', 'L1_TO_L2').whereIn('m.message_hash', sent.l1))
      .orWhere((w) => w.where('m.direction', 'L2_TO_L1').whereIn('m.message_hash', sent.l2))
      .select(
        'm.direction',
        'm.message_hash',
        'm.status',
        'm.claim_tx_hash',
        knex.raw(
          `(select count(*) from ${schema}.message_status_history h where h.message_id = m.id and h.status = 'PENDING') as pendings`,
        ),
      ),
  );
  type Row = {
    direction: string;
    message_hash: string;
    status: string;
    claim_tx_hash: string | null;
    pendings: string | number;
  };
  return new Map(
    (rows as Row[]).map((r) => [
      `${r.direction}:${r.message_hash}`,
      { status: r.status, pendings: Number(r.pendings), claim_tx_hash: r.claim_tx_hash },
    ]),
  );
}

export const keys = (sent: Sent) => [...sent.l1.map((h) => `L1_TO_L2:${h}`), ...sent.l2.map((h) => `L2_TO_L1:${h}`)];

/** Polls until every message is CLAIMED_SUCCESS in the relayer's tables (or the deadline passes). */
export async function waitClaimed(
  db: DbClient,
  schema: string,
  sent: Sent,
  timeoutMs = 90_000,
): Promise<Map<string, Claimed>> {
  const deadline = Date.now() + timeoutMs;
  let last = new Map<string, Claimed>();
  while (Date.now() < deadline) {
    last = await statuses(db, schema, sent);
    if (keys(sent).every((k) => last.get(k)?.status === 'CLAIMED_SUCCESS')) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  return last;
}
