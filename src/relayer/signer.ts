import { Transaction, Wallet } from 'ethers';
import type { SignerConfig } from './config.js';
import { createKmsSigner, createRemoteSigner, type BackendSigner } from './signers/index-remote.js';

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
 * Where keys live. The relayer only ever needs an address and raw signed transactions, so a backend
 * (local key, remote signing service, cloud KMS) implements just these two members.
 */
export interface TxSigner {
  readonly type: SignerConfig['type'];
  readonly address: string;
  /** Returns the signed transaction, RLP-encoded, 0x-prefixed (ready for eth_sendRawTransaction). */
  signTransaction(tx: UnsignedTx): Promise<string>;
}

export function toTransaction(tx: UnsignedTx): Transaction {
  return Transaction.from({
    type: 2,
    chainId: tx.chainId,
    nonce: tx.nonce,
    to: tx.to,
    data: tx.data,
    value: tx.value,
    gasLimit: tx.gasLimit,
    maxFeePerGas: tx.maxFeePerGas,
    maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
  });
}

class PrivateKeySigner implements TxSigner {
  readonly type = 'private-key' as const;
  readonly address: string;
  readonly #wallet: Wallet;

  constructor(privateKey: string) {
    this.#wallet = new Wallet(privateKey);
    this.address = this.#wallet.address.toLowerCase();
  }

  signTransaction(tx: UnsignedTx): Promise<string> {
    return this.#wallet.signTransaction(toTransaction(tx));
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
 * Builds the signer of one chain. The key never leaves its custody for remote-signer and kms: they get
 * the unsigned transaction (or its digest) and every signature is checked to recover to our address.
 */
export async function createSigner(config: SignerConfig): Promise<TxSigner> {
  switch (config.type) {
    case 'private-key':
      return new PrivateKeySigner(config.privateKey);
    case 'remote-signer': {
      const signer = createRemoteSigner({ endpoint: config.endpoint, publicKey: config.publicKey, tls: config.tls }, null);
      return new BackendTxSigner('remote-signer', (await signer.getAddress()).toLowerCase(), signer);
    }
    case 'kms': {
      const signer = await createKmsSigner({ keyId: config.keyId, region: config.region }, null);
      return new BackendTxSigner('kms', (await signer.getAddress()).toLowerCase(), signer);
    }
  }
}
