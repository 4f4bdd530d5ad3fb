/**
 * EIP-1559 (type 2) transactions: the unsigned serialization, the digest a key signs and the signed serialization (its
 * hash is keccak256 of it), as bytes with no parse of anything we built ourselves. The access list is always empty (the
 * relayer names none). Checked against ethers' Transaction in test/common/eth/eip1559.test.ts.
 */
import { keccak256 } from './keccak.js';
import { rlpEncode, uintBytes, type RlpItem } from './rlp.js';

const TYPE = 0x02;
const EMPTY_ACCESS_LIST: RlpItem = [];

/** Every field of a type-2 transaction but the access list (always empty here). */
export interface Eip1559Fields {
  chainId: bigint;
  nonce: number | bigint;
  maxPriorityFeePerGas: bigint;
  maxFeePerGas: bigint;
  gasLimit: bigint;
  /** 20 bytes (contract creation is not supported: the relayer only calls). */
  to: Uint8Array;
  value: bigint;
  data: Uint8Array;
}

/** A secp256k1 signature as a type-2 transaction carries it. */
export interface Eip1559Signature {
  yParity: 0 | 1;
  r: bigint;
  s: bigint;
}

const NONCE_MAX = (1n << 64n) - 1n;

/** The nine fields in their RLP order, checked (EIP-2681 bounds the nonce to 64 bits). */
function fieldItems(tx: Eip1559Fields): RlpItem[] {
  if (!(tx.to instanceof Uint8Array) || tx.to.length !== 20) throw new TypeError('to must be 20 bytes');
  if (!(tx.data instanceof Uint8Array)) throw new TypeError('data must be bytes');
  if (typeof tx.chainId !== 'bigint' || tx.chainId <= 0n)
    throw new RangeError(`chainId must be a positive bigint, got ${String(tx.chainId)}`);
  if (BigInt(tx.nonce) > NONCE_MAX) throw new RangeError(`nonce must be below 2^64, got ${tx.nonce}`);
  return [
    uintBytes(tx.chainId, 'chainId'),
    uintBytes(tx.nonce, 'nonce'),
    uintBytes(tx.maxPriorityFeePerGas, 'maxPriorityFeePerGas'),
    uintBytes(tx.maxFeePerGas, 'maxFeePerGas'),
    uintBytes(tx.gasLimit, 'gasLimit'),
    tx.to,
    uintBytes(tx.value, 'value'),
    tx.data,
    EMPTY_ACCESS_LIST,
  ];
}

/** 0x02 || rlp([chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, gasLimit, to, value, data, accessList]). */
export function serializeUnsigned(tx: Eip1559Fields): Uint8Array {
  return rlpEncode(fieldItems(tx), TYPE);
}

/** The 32-byte digest the sender's key signs: keccak256 of the unsigned serialization. */
export function signingHash(tx: Eip1559Fields): Uint8Array {
  return keccak256(serializeUnsigned(tx));
}

/** The raw transaction for eth_sendRawTransaction: the nine fields, then yParity, r, s. */
export function serializeSigned(tx: Eip1559Fields, sig: Eip1559Signature): Uint8Array {
  if (sig.yParity !== 0 && sig.yParity !== 1)
    throw new RangeError(`yParity must be 0 or 1, got ${String(sig.yParity)}`);
  const items = fieldItems(tx);
  items.push(uintBytes(sig.yParity, 'yParity'), uintBytes(sig.r, 'r'), uintBytes(sig.s, 's'));
  return rlpEncode(items, TYPE);
}
