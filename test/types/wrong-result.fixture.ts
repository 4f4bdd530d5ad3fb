// Deliberately wrong handlers: test/contract/typed-handlers.test.ts compiles this file with `tsc --noEmit`
// (tsconfig.fixtures.json) and expects exactly the errors marked `expect TSxxxx` on the line below the mark.
// Excluded from the project's tsconfig, eslint and vitest globs; right-result.fixture.ts is its correct twin.
import type { Block } from '../../generated/rpc/methods.js';
import { defineMethod } from '../../src/rpc/context.js';
import { RawJson } from '../../src/rpc/upstream/raw-json.js';

// eth_getBalance's result is a Quantity (a hex string), not a number.
// expect TS2322
export const numberForQuantity = defineMethod('eth_getBalance', async () => 42);

// A raw answer carries its result type: a block's text is not eth_chainId's Quantity.
// expect TS2322
export const rawBlockForQuantity = defineMethod('eth_chainId', async () => new RawJson<Block>('{}'));

// eth_getTransactionReceipt answers a receipt or null: a receipt without its required fields is refused.
// expect TS2322
export const partialReceipt = defineMethod('eth_getTransactionReceipt', async (_ctx, [hash]) => ({
  transactionHash: hash,
}));

// Params are the spec's tuple: eth_getBalance's address is a string, it has no toFixed (tsc: "did you mean 'fixed'").
// expect TS2551
export const wrongParamUse = defineMethod('eth_getBalance', async (_ctx, [address]) => `0x${address.toFixed(0)}`);

// A method the spec does not declare cannot be defined.
// expect TS2345
export const unknownMethod = defineMethod('eth_notInTheSpec', async () => '0x1');
