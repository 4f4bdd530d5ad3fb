import { Wallet } from 'ethers';
import { createProvider } from '../../../src/common/chain/provider.js';
import { mined } from '../../../src/common/chain/mined.js';
import type { Common } from '../../../src/common/kernel.js';
import { testCommon } from '../../helpers/common.js';
import type { DbClient } from '../../../src/common/db/client.js';
import { startDevnet, type Devnet } from '../../../src/devnet/devnet.js';
import { startCoordinator, DEFAULT_COORDINATOR, type Coordinator } from '../../../src/devnet/coordinator/index.js';
import { ROLES } from '../../../src/devnet/accounts.js';
import {
  L1MessageService__factory,
  L2MessageService__factory,
  CallRecorder__factory,
} from '../../../generated/contracts/types/index.js';

export { testCommon };

export interface RelayerDevnet {
  devnet: Devnet;
  coordinator: Coordinator;
  /** Account i (10..19 are free for tests) on L1 and L2. */
  wallet(index: number, layer: 'l1' | 'l2'): Wallet;
  relayerKey: string;
  relayerAddress: string;
  stop(): Promise<void>;
}

/**
 * A devnet for relayer tests: chains, contracts and a coordinator whose bookkeeping lives in this test's
 * own schema (the devnet's default coordinator uses one fixed schema, which parallel files would share).
 */
export async function startRelayerDevnet(
  common: Common,
  db: DbClient,
  coordinatorSchema: string,
  options: { blockTimeMs?: number; coordinatorL1Confirmations?: number } = {},
): Promise<RelayerDevnet> {
  const devnet = await startDevnet({
    common,
    db,
    options: { historyHours: 0, traffic: false, coordinator: false, blockTimeMs: options.blockTimeMs ?? 500 },
  });
  const { state } = devnet;
  const l1p = createProvider(state.l1.rpcUrl, state.l1.chainId, { pollingInterval: 50 });
  const l2p = createProvider(state.l2.rpcUrl, state.l2.chainId, { pollingInterval: 50 });
  const coordinator = await startCoordinator({
    common,
    db,
    schema: coordinatorSchema,
    config: {
      ...DEFAULT_COORDINATOR,
      l1Confirmations: options.coordinatorL1Confirmations ?? DEFAULT_COORDINATOR.l1Confirmations,
      anchorIntervalMs: 300,
      finalizationIntervalMs: 600,
      l1StartBlock: 0,
      l1: { rpcUrl: state.l1.rpcUrl, chainId: state.l1.chainId, messageService: state.l1.messageService },
      l2: { rpcUrl: state.l2.rpcUrl, chainId: state.l2.chainId, messageService: state.l2.messageService },
      privateKey: state.accounts[ROLES.coordinator]!.privateKey,
    },
  });
  const relayer = state.accounts[ROLES.relayer]!;
  return {
    devnet,
    coordinator,
    wallet: (i, layer) => new Wallet(state.accounts[i]!.privateKey, layer === 'l1' ? l1p : l2p),
    relayerKey: relayer.privateKey,
    relayerAddress: relayer.address.toLowerCase(),
    async stop() {
      await coordinator.stop();
      await devnet.stop();
      l1p.destroy();
      l2p.destroy();
    },
  };
}

/** Environment of a relayer on this devnet: both directions, fast polling, one confirmation. */
/** Listener settings for tests: one confirmation and 200 ms polling (the devnet mines a block a second). */
export const FAST_LISTENER = {
  L1_LISTENER_BLOCK_CONFIRMATION: '1',
  L2_LISTENER_BLOCK_CONFIRMATION: '1',
  L1_LISTENER_INTERVAL: '200',
  L2_LISTENER_INTERVAL: '200',
  L1_LISTENER_RECEIPT_POLLING_INTERVAL: '200',
  L2_LISTENER_RECEIPT_POLLING_INTERVAL: '200',
};

export function relayerEnv(
  d: Pick<RelayerDevnet, 'devnet' | 'relayerKey'>,
  overrides: Record<string, string> = {},
): Record<string, string> {
  const s = d.devnet.state;
  return {
    L1_L2_AUTO_CLAIM_ENABLED: 'true',
    L2_L1_AUTO_CLAIM_ENABLED: 'true',
    DB_CLEANER_ENABLED: 'false',
    L1_CONTRACT_ADDRESS: s.l1.messageService,
    L2_CONTRACT_ADDRESS: s.l2.messageService,
    L1_RPC_URL: s.l1.rpcUrl,
    L2_RPC_URL: s.l2.rpcUrl,
    L1_SIGNER_TYPE: 'private-key',
    L2_SIGNER_TYPE: 'private-key',
    L1_SIGNER_PRIVATE_KEY: d.relayerKey,
    L2_SIGNER_PRIVATE_KEY: d.relayerKey,
    L1_L2_EOA_ENABLED: 'true',
    L1_L2_CALLDATA_ENABLED: 'true',
    L2_L1_EOA_ENABLED: 'true',
    L2_L1_CALLDATA_ENABLED: 'true',
    ...FAST_LISTENER,
    ...overrides,
  };
}

export const recorder = CallRecorder__factory.createInterface();
export const recordCall = (amount: bigint, note = '0x') => recorder.encodeFunctionData('record', [amount, note]);

/** Sends a message from `sender` on its layer; returns the message hash from the MessageSent log. */
export async function sendMessage(
  d: RelayerDevnet,
  sender: Wallet,
  layer: 'l1' | 'l2',
  m: { to: string; fee: bigint; value?: bigint; calldata?: string; nonce?: number },
): Promise<string> {
  const s = d.devnet.state;
  const contract =
    layer === 'l1'
      ? L1MessageService__factory.connect(s.l1.messageService, sender)
      : L2MessageService__factory.connect(s.l2.messageService, sender);
  const tx = await contract.sendMessage(m.to, m.fee, m.calldata ?? '0x', {
    value: m.fee + (m.value ?? 0n),
    ...(m.nonce !== undefined ? { nonce: m.nonce } : {}),
  });
  // mined(), not ethers' wait(), which can miss a receipt and wait without end (src/common/chain/mined.ts).
  const receipt = await mined(tx);
  const log = receipt.logs.map((l) => contract.interface.parseLog(l)).find((p) => p?.name === 'MessageSent')!;
  return String(log.args._messageHash).toLowerCase();
}
