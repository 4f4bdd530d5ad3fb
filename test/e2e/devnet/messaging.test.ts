import { afterAll, describe, expect, inject, it } from 'vitest';
import { parseEther, ZeroAddress, Interface } from 'ethers';
import {
  L1MessageService__factory,
  L2MessageService__factory,
  CallRecorder__factory,
} from '../../../generated/contracts/types/index.js';
import { messageHash, messageTrees } from '../../../src/common/chain/messages.js';
import { rootFromProof } from '../../helpers/messages.js';
import { devnetSigners, waitFor } from '../../helpers/chain.js';
import { mined } from '../../../src/common/chain/mined.js';

const state = inject('devnet');
const alice = devnetSigners(state, 10);
const bob = state.accounts[11]!;
afterAll(() => alice.destroy());

describe('devnet messaging', () => {
  it('behavior: an L1→L2 message is anchored by the coordinator, becomes claimable, and claims once', async () => {
    const l1 = L1MessageService__factory.connect(state.l1.messageService, alice.l1);
    const l2 = L2MessageService__factory.connect(state.l2.messageService, alice.l2);
    const fee = parseEther('0.001');
    const value = parseEther('0.01');
    const receipt = await mined(l1.sendMessage(bob.address, fee, '0x', { value: fee + value }));
    const sent = l1.interface.parseLog(
      receipt!.logs.find(
        (l) => l.address === state.l1.messageService && l.topics[0] === l1.interface.getEvent('MessageSent').topicHash,
      )!,
    )!;
    const hash = sent.args._messageHash as string;
    expect(hash).toBe(
      messageHash({
        from: alice.account.address,
        to: bob.address,
        fee,
        value,
        nonce: sent.args._nonce as bigint,
        calldata: '0x',
      }),
    );

    await waitFor('the L1→L2 message to be claimable on L2', async () =>
      (await l2.inboxL1L2MessageStatus(hash)) === 1n ? true : undefined,
    );

    const before = await alice.l2Provider.getBalance(bob.address);
    await mined(
      l2.claimMessage(alice.account.address, bob.address, fee, value, ZeroAddress, '0x', sent.args._nonce as bigint),
    );
    expect(await l2.inboxL1L2MessageStatus(hash)).toBe(2n);
    expect((await alice.l2Provider.getBalance(bob.address)) - before).toBe(value);
    await expect(
      l2.claimMessage.staticCall(
        alice.account.address,
        bob.address,
        fee,
        value,
        ZeroAddress,
        '0x',
        sent.args._nonce as bigint,
      ),
    ).rejects.toThrow();
  });

  it('behavior: an L2→L1 message is finalized under a root whose off-chain proof claims on L1, exactly once', async () => {
    const l1 = L1MessageService__factory.connect(state.l1.messageService, alice.l1);
    const l2 = L2MessageService__factory.connect(state.l2.messageService, alice.l2);
    const recorder = CallRecorder__factory.connect(state.callRecorder.l1, alice.l1Provider);
    const calldata = new Interface(['function record(uint256 amount, bytes note)']).encodeFunctionData('record', [
      77n,
      '0x6869',
    ]);
    const fee = parseEther('0.002');
    const value = parseEther('0.005');
    const receipt = await mined(l2.sendMessage(state.callRecorder.l1, fee, calldata, { value: fee + value }));
    const sent = l2.interface.parseLog(
      receipt!.logs.find((l) => l.topics[0] === l2.interface.getEvent('MessageSent').topicHash)!,
    )!;
    const nonce = sent.args._nonce as bigint;
    const hash = sent.args._messageHash as string;

    // The coordinator finalizes the message's block: find that finalization's events on L1.
    const anchored = await waitFor('L2MessagingBlockAnchored for the message block', async () => {
      const logs = await l1.queryFilter(l1.filters.L2MessagingBlockAnchored(receipt!.blockNumber));
      return logs[0];
    });
    const finalizationLogs = (await alice.l1Provider.getTransactionReceipt(anchored.transactionHash))!.logs.map((l) =>
      l1.interface.parseLog(l)!,
    );
    const finalized = finalizationLogs.find((e) => e.name === 'BlocksFinalized')!;
    const roots = finalizationLogs
      .filter((e) => e.name === 'L2MerkleRootAdded')
      .map((e) => ({ root: e.args.l2MerkleRoot as string, depth: Number(e.args.treeDepth) }));
    expect(roots.length).toBeGreaterThan(0);

    // Rebuild the trees from every L2 message of the finalized range, in nonce order, as a relayer would.
    const range = await l2.queryFilter(
      l2.filters.MessageSent(),
      Number(finalized.args.lastFinalizedBlock) + 1,
      Number(finalized.args.finalizedBlock),
    );
    const hashes = range.sort((a, b) => (a.args._nonce < b.args._nonce ? -1 : 1)).map((e) => e.args._messageHash);
    const depth = roots[0]!.depth;
    const trees = messageTrees(hashes, depth);
    expect(trees.map((t) => t.root)).toEqual(roots.map((r) => r.root));
    const position = hashes.indexOf(hash);
    const tree = trees[Math.floor(position / 2 ** depth)]!;
    const leafIndex = position % 2 ** depth;
    const proof = tree.proof(leafIndex);
    expect(rootFromProof(hash, leafIndex, proof)).toBe(tree.root);

    const params = {
      proof,
      messageNumber: nonce,
      leafIndex,
      from: alice.account.address,
      to: state.callRecorder.l1,
      fee,
      value,
      feeRecipient: ZeroAddress,
      merkleRoot: tree.root,
      data: calldata,
    };
    const callsBefore = await recorder.callCount();
    await mined(l1.claimMessageWithProof(params));
    expect(await l1.isMessageClaimed(nonce)).toBe(true);
    expect(await recorder.callCount()).toBe(callsBefore + 1n);
    const call = await recorder.calls(callsBefore);
    expect(call.amount).toBe(77n);
    expect(call.value).toBe(value);
    await expect(l1.claimMessageWithProof.staticCall(params)).rejects.toThrow(/MessageAlreadyClaimed|0x/);
  });

  it('behavior: the finalized state root is readable on L1 through currentL2BlockNumber and stateRootHashes', async () => {
    const l1 = L1MessageService__factory.connect(state.l1.messageService, alice.l1Provider);
    const block = await waitFor('a finalized L2 block', async () => {
      const n = await l1.currentL2BlockNumber();
      return n > 0n ? n : undefined;
    });
    const root = await l1.stateRootHashes(block);
    expect(root).toMatch(/^0x[0-9a-f]{64}$/);
    expect(root).not.toBe(`0x${'0'.repeat(64)}`);
  });
});
