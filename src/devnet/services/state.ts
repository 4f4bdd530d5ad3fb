import type { Common } from '../../common/kernel.js';
import type { DbClient } from '../../common/db/client.js';
import type { StateRootSource } from '../coordinator/index.js';
import type { Devnet, DevnetChains } from '../devnet.js';
import { loadStateConfig, startStateManager, type RunningStateManager } from '../../state/index.js';

/**
 * The coordinator starts with the chains, before the state manager can (it needs their addresses); this
 * source stands in until the manager is attached. Until then nothing is "known", so nothing is finalized:
 * every finalization of `l2stack dev` carries the state manager's root.
 */
export class LateStateRoots implements StateRootSource {
  private manager: RunningStateManager | undefined;

  attach(manager: RunningStateManager): void {
    this.manager = manager;
  }

  latestBlock(): bigint {
    return this.manager ? this.manager.latestBlock() : -1n;
  }

  rootAt(block: bigint): Promise<string | undefined> {
    return this.manager ? this.manager.rootAt(block) : Promise.resolve(undefined);
  }
}

/**
 * Starts the state manager over the devnet: the L2 upstream (by parity replay), L1 finalization events, the funded
 * genesis accounts.
 */
export async function startDevnetStateManager(ctx: {
  common: Common;
  db: DbClient;
  devnet: Devnet | { state: DevnetChains };
  env: Record<string, string | undefined>;
}): Promise<RunningStateManager> {
  const s = ctx.devnet.state;
  // The parity replay, not the prestateTracer: anvil can deadlock when a prestateTracer trace meets its
  // miner, and then answers nothing (src/state/parity-diff.ts says why).
  const config = loadStateConfig(
    {
      ...ctx.env,
      STATE_L2_RPC_URL: s.l2.upstreamRpcUrl,
      STATE_L1_RPC_URL: s.l1.rpcUrl,
      STATE_L1_MESSAGE_SERVICE: s.l1.messageService,
      STATE_L2_TRACE_METHOD: 'trace_replayBlockTransactions',
    },
    { genesisAccounts: s.accounts.map((a) => a.address), pollIntervalMs: 500 },
  );
  return startStateManager({ common: ctx.common, db: ctx.db, config });
}
