import { keccak256 } from '../../common/eth/keccak.js';
import { defineMethod } from '../context.js';

/** web3_sha3: Keccak-256 of the data, computed here (a pure function needs no node and no rate of its own). */
export default defineMethod('web3_sha3', async (_ctx, [data]) => {
  const digest = keccak256(Buffer.from(data.slice(2), 'hex'));
  return `0x${Buffer.from(digest).toString('hex')}`;
});
