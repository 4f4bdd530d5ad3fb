// The correct twin of wrong-result.fixture.ts: the same handlers with the shapes the spec allows. It must
// compile cleanly in the same program (tsconfig.fixtures.json), so typed-handlers.test.ts cannot pass because nothing
// compiles.
import type { Block } from '../../generated/rpc/methods.js';
import { defineMethod } from '../../src/rpc/context.js';
import { RawJson } from '../../src/rpc/upstream/raw-json.js';

export const numberForQuantity = defineMethod('eth_getBalance', async () => '0x2a');

export const rawBlock = defineMethod('eth_getBlockByNumber', async () => new RawJson<Block | null>('null'));

export const noReceipt = defineMethod('eth_getTransactionReceipt', async () => null);

export const paramUse = defineMethod('eth_getBalance', async (_ctx, [address]) => `0x${address.slice(2, 4)}`);

export const knownMethod = defineMethod('eth_chainId', async () => '0x1');
