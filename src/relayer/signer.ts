import { secp256k1 } from '@noble/curves/secp256k1.js';
import { Transaction } from 'ethers';
import { serializeSigned, signingHash, type Eip1559Fields } from '../common/eth/eip1559.js';
import { bytesToHex, hexToBytes, isHexOfLength } from '../common/eth/hex.js';
import { keccak256 } from '../common/eth/keccak.js';
import type { SignerConfig } from './signer-config.js';
import type { BackendSigner } from './signers/backends.js';

/** An EIP-1559 transaction the relayer asks a signer to sign (all fields explicit, nothing filled in). */
export interface UnsignedTx {
  chainId: bigint;
  nonce: number;
  to: string;
  data: string;
  value: bigint;
  gasLimit: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/**
 * Where keys live. The relayer only ever needs an address and raw signed transactions, so a backend (local key, remote
 * signing service, cloud KMS) implements just these two members.
 */
export interface TxSigner {
  readonly type: SignerConfig['type'];
  readonly address: string;
  /** Returns the signed transaction, RLP-encoded, 0x-prefixed (ready for eth_sendRawTransaction). */
  signTransaction(tx: UnsignedTx): Promise<string>;
}

/** The transaction as ethers' Transaction (EIP-1559: type 2), for the backend signers. */
export const toTransaction = (tx: UnsignedTx): Transaction => Transaction.from({ type: 2, ...tx });

// A signature is mostly one multiplication of the curve's base point by the nonce, from a table of its multiples that
// noble builds on first use, in 6-bit windows by default. 8-bit windows (what ethers' bundled noble 1.x used) measured
// ~13 % less CPU per signature here (test/bench/relayer-sign.ts) for a table of a few hundred kB, built once; the
// signatures are the same.
secp256k1.Point.BASE.precompute(8);

/** The fields of `tx` as bytes, for the serializer (hex checked: a malformed `to` or `data` throws). */
export function toEip1559Fields(tx: UnsignedTx): Eip1559Fields {
  if (!isHexOfLength(tx.to, 20))
    throw new TypeError(`to must be a 20-byte 0x-prefixed hex address, got "${String(tx.to)}"`);
  return {
    chainId: tx.chainId,
    nonce: tx.nonce,
    maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
    maxFeePerGas: tx.maxFeePerGas,
    gasLimit: tx.gasLimit,
    to: hexToBytes(tx.to, 'to'),
    value: tx.value,
    data: hexToBytes(tx.data, 'data'),
  };
}

/** The lower-case address of a secp256k1 secret key: the last 20 bytes of keccak256 of its uncompressed public key. */
export function addressOf(secretKey: Uint8Array): string {
  const publicKey = secp256k1.getPublicKey(secretKey, false);
  return bytesToHex(keccak256(publicKey.subarray(1)).subarray(12));
}

/**
 * A key held in this process. Signs with @noble/curves directly (RFC 6979 deterministic nonces, low s, as ethers'
 * Wallet, which uses the same library underneath) and serializes with src/common/eth: the Wallet's Transaction object,
 * its re-serialization and its hex round trips were the relayer's largest CPU cost per claim (issue 12).
 */
class PrivateKeySigner implements TxSigner {
  readonly type = 'private-key' as const;
  readonly address: string;
  readonly #secretKey: Uint8Array;

  constructor(privateKey: string) {
    if (!isHexOfLength(privateKey, 32))
      throw new TypeError('the signer private key must be 0x followed by 64 hex digits');
    this.#secretKey = Uint8Array.from(hexToBytes(privateKey, 'private key'));
    if (!secp256k1.utils.isValidSecretKey(this.#secretKey))
      throw new RangeError('the signer private key is not a valid secp256k1 key (0, or not below the curve order)');
    this.address = addressOf(this.#secretKey);
  }

  signTransaction(tx: UnsignedTx): Promise<string> {
    try {
      const fields = toEip1559Fields(tx);
      const sig = secp256k1.sign(signingHash(fields), this.#secretKey, {
        prehash: false,
        lowS: true,
        format: 'recovered',
      });
      // 'recovered' is recovery id || r || s. Ids 2 and 3 (r at or above the curve order) occur with probability
      // ~2^-128 and have no yParity: refuse rather than send an unrecoverable transaction.
      const recovery = sig[0]!;
      if (recovery > 1) throw new Error(`signature recovery id ${recovery} cannot be expressed as yParity`);
      const r = BigInt(bytesToHex(sig.subarray(1, 33)));
      const s = BigInt(bytesToHex(sig.subarray(33, 65)));
      return Promise.resolve(bytesToHex(serializeSigned(fields, { yParity: recovery as 0 | 1, r, s })));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  toJSON() {
    return { type: this.type, address: this.address };
  }
}

/** Adapts an ethers signer backed by a remote service (Web3Signer, KMS) to the relayer's TxSigner. */
class BackendTxSigner implements TxSigner {
  constructor(
    readonly type: SignerConfig['type'],
    readonly address: string,
    private readonly signer: BackendSigner,
  ) {}

  signTransaction(tx: UnsignedTx): Promise<string> {
    return this.signer.signTransaction(toTransaction(tx));
  }

  close(): void {
    this.signer.close();
  }

  toJSON() {
    return { type: this.type, address: this.address };
  }
}

/**
 * Builds the signer of one chain. The key never leaves its custody for remote-signer and kms: they get the unsigned
 * transaction (or its digest) and every signature is checked to recover to our address.
 */
export async function createSigner(config: SignerConfig): Promise<TxSigner> {
  if (config.type === 'private-key') return new PrivateKeySigner(config.privateKey);
  // Loaded only for these backends: the AWS SDK and node-forge cost a private-key relayer ~0.2 s of CPU at start.
  const { createKmsSigner, createRemoteSigner } = await import('./signers/backends.js');
  const signer =
    config.type === 'kms'
      ? await createKmsSigner({ keyId: config.keyId, region: config.region }, null)
      : createRemoteSigner({ endpoint: config.endpoint, publicKey: config.publicKey, tls: config.tls }, null);
  return new BackendTxSigner(config.type, (await signer.getAddress()).toLowerCase(), signer);
}
