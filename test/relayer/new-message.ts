import type { NewMessage } from '../../src/relayer/db/repository.js';

/**
 * A stored-message record for the relayer's database tests: hash and nonce from `index` (unique per test
 * database), sent in block `block`, an L1→L2 message in SENT with the largest uint256 fee (so fee columns are
 * checked exactly); `over` changes any field.
 */
export function newMessage(index: number, block: number, over: Partial<NewMessage> = {}): NewMessage {
  return {
    message_hash: `0x${index.toString(16).padStart(64, '0')}`,
    direction: 'L1_TO_L2',
    message_sender: `0x${'1'.repeat(40)}`,
    destination: `0x${'2'.repeat(40)}`,
    fee: '115792089237316195423570985008687907853269984665640564039457584007913129639935',
    value: '0',
    message_nonce: String(index),
    calldata: '0x',
    contract_address: `0x${'3'.repeat(40)}`,
    sent_block_number: block,
    sent_tx_hash: `0x${'4'.repeat(64)}`,
    sent_log_index: 0,
    status: 'SENT',
    failure_reason: null,
    ...over,
  };
}
