import type { Logger } from '../../common/log.js';
import type { Chain } from '../chain.js';

/** What the receipt persister needs of a receipt. */
export interface Receipt {
  hash: string;
  status: number;
  blockNumber: number;
  gasUsed: bigint;
  gasPrice: bigint;
}

interface RawReceipt {
  transactionHash: string;
  from: string;
  status?: string;
  blockNumber: string;
  gasUsed: string;
  effectiveGasPrice?: string;
}

/** At most this many new blocks are read per tick; further back, receipts are asked for by hash. */
const MAX_BLOCKS_PER_TICK = 16;

/**
 * Receipts of the signers' transactions (every key of one direction), read per block (eth_getBlockReceipts) rather than
 * per claim: each new block is read once, whatever the number of claims in it. Only the blocks new since the last call
 * are returned (a reorg may replace older ones; their claims are asked for by hash). Where the node does not
 * serve the method, nothing is found here and the persister asks by hash, as before.
 */
export function createBlockReceipts(chain: Chain, signers: readonly string[], logger: Logger) {
  const from = new Set(signers.map((s) => s.toLowerCase()));
  let readUpTo: number | undefined;
  let unsupported = false;

  async function read(block: number, found: Map<string, Receipt>): Promise<void> {
    const rs = (await chain.provider.send('eth_getBlockReceipts', [`0x${block.toString(16)}`])) as RawReceipt[] | null;
    for (const r of rs ?? []) {
      if (!from.has(r.from.toLowerCase())) continue;
      const hash = r.transactionHash.toLowerCase();
      found.set(hash, {
        hash,
        status: Number(r.status ?? '0x1'),
        blockNumber: Number(r.blockNumber),
        gasUsed: BigInt(r.gasUsed),
        gasPrice: BigInt(r.effectiveGasPrice ?? '0x0'),
      });
    }
  }

  return {
    /** Reads the blocks mined since the last call (up to the head): the signer's receipts in them. */
    async receipts(): Promise<Map<string, Receipt>> {
      const found = new Map<string, Receipt>();
      if (unsupported) return found;
      const head = await chain.provider.getBlockNumber();
      const first = Math.max((readUpTo ?? head - 1) + 1, head - MAX_BLOCKS_PER_TICK + 1);
      try {
        await Promise.all(Array.from({ length: Math.max(head - first + 1, 0) }, (_, i) => read(first + i, found)));
      } catch (err) {
        if (
          !/-32601|not (exist|available|supported)|method not found|unsupported/i.test(String((err as Error).message))
        )
          throw err;
        unsupported = true;
        logger.warn(
          { chain: chain.name },
          'the node does not serve eth_getBlockReceipts; receipts are read per transaction',
        );
        return found;
      }
      readUpTo = Math.max(readUpTo ?? head, head);
      return found;
    },
  };
}
