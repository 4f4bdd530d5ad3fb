import type { Command } from './command.js';
import { UsageError } from './command.js';
import { withRelayerDb } from './relayer-db.js';

export const resetChainPinCommand: Command = {
  name: 'reset-chain-pin',
  summary:
    'forget the chains the relayer database is pinned to (after a testnet reset), so the next start pins the configured ones',
  usage: '[--abandon-unfinished]',
  maxPositionals: 0,
  options: { 'abandon-unfinished': { type: 'boolean' } },
  optionHelp: [
    '--abandon-unfinished  also give up the messages still in progress (SENT, TRANSACTION_SIZE_COMPUTED, ANCHORED,',
    '                      PENDING, FEE_UNDERPRICED): each becomes NEEDS_MANUAL_INTERVENTION with the reason in its',
    '                      history and is never sent again. Without it the reset is refused while any exist.',
    'Messages are never deleted. Listener and finalization cursors, leased nonces and indexed L1 finalizations',
    '(all about the old chains) are dropped with the pin. Stop every relayer on this database first. Uses DATABASE_*.',
  ],
  async run({ values }) {
    const abandon = values['abandon-unfinished'] === true;
    const { resetChainPin } = await import('../relayer/db/chain-pin.js');
    return withRelayerDb('chain_pin', async (repository) => {
      const out = await resetChainPin(repository, { abandon });
      const unfinished = Object.entries(out.unfinished)
        .map(([s, n]) => `${n} ${s}`)
        .join(', ');
      if (out.refused) {
        throw new UsageError(
          `refused: ${unfinished} message(s) are still in progress on the pinned chains; add --abandon-unfinished to give them up (they become NEEDS_MANUAL_INTERVENTION, kept, never sent again)`,
        );
      }
      for (const p of out.dropped)
        process.stdout.write(
          `dropped pin ${p.layer}: chain id ${p.chainId}, genesis ${p.genesisHash}, contract ${p.contractAddress}\n`,
        );
      if (out.abandoned > 0)
        process.stdout.write(
          `${out.abandoned} unfinished message(s) abandoned (${unfinished}) -> NEEDS_MANUAL_INTERVENTION\n`,
        );
      process.stdout.write(
        `${out.dropped.length === 0 ? 'no pin was recorded; ' : ''}the next relayer start pins the configured chains\n`,
      );
      return 0;
    });
  },
};
