/**
 * Calldata of the two claim calls, written as hex directly: ethers' Interface re-walks the ABI fragment,
 * checksums every address (a keccak each) and builds a Result per call, which cost ~10 % of the relayer's
 * CPU per claim (issue 12). The selectors come from the generated bindings (specs/abi), and the signatures
 * are checked at module load, so an ABI change that this encoder does not follow fails at startup rather
 * than sending wrong calldata. Checked against ethers' encodeFunctionData in test/relayer/claim-calldata.test.ts.
 */
import { L1MessageServiceInterface, L2MessageServiceInterface } from '../../../generated/contracts/abi/index.js';
import { isHexOfLength } from '../../common/eth/hex.js';

/** The selector of `name`, after checking its signature is the one this module encodes. */
function selectorOf(iface: typeof L1MessageServiceInterface, name: string, signature: string): string {
  const fragment = iface.getFunction(name);
  if (!fragment || fragment.format('sighash') !== signature) {
    throw new Error(
      `the ABI's ${name} is ${fragment?.format('sighash') ?? 'missing'}, the claim encoder writes ${signature}: update src/relayer/claim/calldata.ts`,
    );
  }
  return fragment.selector;
}

const CLAIM_MESSAGE = selectorOf(
  L2MessageServiceInterface,
  'claimMessage',
  'claimMessage(address,address,uint256,uint256,address,bytes,uint256)',
);
const CLAIM_MESSAGE_WITH_PROOF = selectorOf(
  L1MessageServiceInterface,
  'claimMessageWithProof',
  'claimMessageWithProof((bytes32[],uint256,uint32,address,address,uint256,uint256,address,bytes32,bytes))',
);

/** Most proof entries accepted: a Merkle path as deep as a uint32 leaf index allows. */
const MAX_PROOF_LENGTH = 32;
const MAX_UINT256 = (1n << 256n) - 1n;
const ZERO_WORD = '0'.repeat(64);
const HEX_DIGITS = /^[0-9a-fA-F]*$/;

/** One 32-byte word (64 hex digits, no 0x) of an unsigned integer given as bigint, number or decimal string. */
function uintWord(value: bigint | number | string, what: string, max = MAX_UINT256): string {
  let v: bigint;
  try {
    // BigInt('') is 0: a blank field is an error, not a zero.
    if (typeof value === 'string' && value.trim() === '') throw new RangeError('blank');
    v = BigInt(value);
  } catch {
    throw new RangeError(
      `${what} is not an integer: ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`,
    );
  }
  if (v < 0n || v > max) throw new RangeError(`${what} is out of range: ${v}`);
  return v.toString(16).padStart(64, '0');
}

function addressWord(address: string, what: string): string {
  if (!isHexOfLength(address, 20)) throw new TypeError(`${what} is not a 20-byte hex address: "${String(address)}"`);
  return `000000000000000000000000${address.slice(2).toLowerCase()}`;
}

function bytes32Word(value: string, what: string): string {
  if (!isHexOfLength(value, 32)) throw new TypeError(`${what} is not 32 bytes of hex: "${String(value)}"`);
  return value.slice(2).toLowerCase();
}

/** The tail of a `bytes` argument: its length word, then the bytes right-padded to whole words. */
function bytesTail(hex: string, what: string): string {
  if (typeof hex !== 'string' || !hex.startsWith('0x') || hex.length % 2 !== 0 || !HEX_DIGITS.test(hex.slice(2))) {
    throw new TypeError(`${what} is not 0x-prefixed even-length hex`);
  }
  const digits = hex.length - 2;
  const pad = (64 - (digits % 64)) % 64;
  return uintWord(digits / 2, `${what} length`) + hex.slice(2).toLowerCase() + ZERO_WORD.slice(0, pad);
}

/** What both claims carry of a message. */
export interface ClaimedMessage {
  from: string;
  to: string;
  fee: bigint | string;
  value: bigint | string;
  feeRecipient: string;
  /** 0x-prefixed hex, possibly empty (`0x`). */
  calldata: string;
  nonce: bigint | string;
}

/** The five words both claims carry in this order: from, to, fee, value, feeRecipient. */
const messageWords = (m: ClaimedMessage) =>
  addressWord(m.from, 'from') +
  addressWord(m.to, 'to') +
  uintWord(m.fee, 'fee') +
  uintWord(m.value, 'value') +
  addressWord(m.feeRecipient, 'feeRecipient');

/** claimMessage(from, to, fee, value, feeRecipient, calldata, nonce): L1→L2 claims on the L2 message service. */
export function encodeClaimMessageCall(m: ClaimedMessage): string {
  // Seven head words; the calldata's tail starts right after them.
  return (
    CLAIM_MESSAGE +
    messageWords(m) +
    uintWord(7 * 32, 'offset') +
    uintWord(m.nonce, 'nonce') +
    bytesTail(m.calldata, 'calldata')
  );
}

/** What claimMessageWithProof adds: where the message sits in the finalized L2 Merkle tree. */
export interface ProvenMessage extends ClaimedMessage {
  proof: readonly string[];
  leafIndex: number | bigint | string;
  merkleRoot: string;
}

/**
 * claimMessageWithProof((proof, messageNumber, leafIndex, from, to, fee, value, feeRecipient, merkleRoot, data)): L2→L1
 * claims on L1.
 */
export function encodeClaimMessageWithProofCall(m: ProvenMessage): string {
  if (!Array.isArray(m.proof)) throw new TypeError('proof must be an array of 32-byte hex values');
  if (m.proof.length > MAX_PROOF_LENGTH)
    throw new RangeError(`proof has ${m.proof.length} entries, more than ${MAX_PROOF_LENGTH}`);
  // The struct is dynamic: one offset word to it, then its ten head words, the proof array, the data.
  const HEAD = 10 * 32;
  const proofTail =
    uintWord(m.proof.length, 'proof length') + m.proof.map((p, i) => bytes32Word(p, `proof[${i}]`)).join('');
  return (
    CLAIM_MESSAGE_WITH_PROOF +
    uintWord(32, 'offset') +
    uintWord(HEAD, 'proof offset') +
    uintWord(m.nonce, 'messageNumber') +
    uintWord(m.leafIndex, 'leafIndex', 0xffffffffn) +
    messageWords(m) +
    bytes32Word(m.merkleRoot, 'merkleRoot') +
    uintWord(HEAD + 32 * (1 + m.proof.length), 'data offset') +
    proofTail +
    bytesTail(m.calldata, 'calldata')
  );
}
