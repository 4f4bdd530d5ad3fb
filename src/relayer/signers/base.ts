import {
  AbstractSigner,
  MessagePrefix,
  Signature,
  Transaction,
  TypedDataEncoder,
  concat,
  copyRequest,
  getAddress,
  getBytes,
  keccak256,
  recoverAddress,
  resolveAddress,
  resolveProperties,
  toUtf8Bytes,
  type Provider,
  type TransactionLike,
  type TransactionRequest,
  type TypedDataDomain,
  type TypedDataField,
} from 'ethers';
import { BaseError } from '../../common/errors.js';

/** Socket error codes that mean a signing service could not be reached: transient, worth another try. */
export const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ETIMEDOUT',
]);

/**
 * A key held somewhere else (a signing service, a cloud KMS). Backends differ in what they are given:
 * Web3Signer hashes the bytes it receives itself, KMS signs a finished digest. So every request carries
 * both the preimage and its keccak-256 digest, and the backend uses the one its API expects.
 */
export interface SigningBackend {
  /** Checksummed address of the key, known before any signature is asked for. */
  readonly address: string;
  /** Names the backend in errors and logs, without credentials (e.g. the redacted endpoint or key id). */
  readonly description: string;
  sign(preimage: Uint8Array, digest: string): Promise<Signature>;
  /** Releases sockets and clients; the signer is unusable afterwards. */
  close(): void;
}

/** The backend returned a signature made by another key: using it would send from a wrong address. */
export class SignatureMismatchError extends BaseError {
  override name = 'SignatureMismatchError';
}

/**
 * An ethers v6 signer whose key lives in a backend. It never trusts a returned signature: each one must
 * recover to the configured address before it is attached, so a misconfigured or compromised signer
 * cannot make us broadcast a transaction from an account we did not mean to use.
 */
export abstract class BackendSigner extends AbstractSigner {
  readonly address: string;

  constructor(
    readonly backend: SigningBackend,
    provider?: Provider | null,
  ) {
    super(provider);
    this.address = backend.address;
  }

  getAddress(): Promise<string> {
    return Promise.resolve(this.address);
  }

  async signTransaction(request: TransactionRequest): Promise<string> {
    const tx = copyRequest(request);
    // The same address resolution as ethers' own Wallet, so an Addressable or ENS name works here too.
    const { to, from } = await resolveProperties({
      to: tx.to ? resolveAddress(tx.to, this) : undefined,
      from: tx.from ? resolveAddress(tx.from, this) : undefined,
    });
    if (to != null) tx.to = to;
    if (from != null && getAddress(from) !== this.address) {
      throw new SignatureMismatchError(
        `transaction from ${from} cannot be signed by ${this.backend.description} (address ${this.address})`,
      );
    }
    delete tx.from;
    const btx = Transaction.from(tx as TransactionLike<string>);
    btx.signature = await this.#signChecked(btx.unsignedSerialized);
    return btx.serialized;
  }

  async signMessage(message: string | Uint8Array): Promise<string> {
    const bytes = typeof message === 'string' ? toUtf8Bytes(message) : message;
    // EIP-191: the same preimage ethers' hashMessage hashes.
    const preimage = concat([toUtf8Bytes(MessagePrefix), toUtf8Bytes(String(bytes.length)), bytes]);
    return (await this.#signChecked(preimage)).serialized;
  }

  async signTypedData(
    domain: TypedDataDomain,
    types: Record<string, TypedDataField[]>,
    value: Record<string, unknown>,
  ): Promise<string> {
    const resolved = await TypedDataEncoder.resolveNames(domain, types, value, async (name: string) => {
      if (!this.provider)
        throw new BaseError(`cannot resolve ENS name "${name}" in typed data: the signer has no provider`);
      const address = await this.provider.resolveName(name);
      if (address == null) throw new BaseError(`ENS name "${name}" in typed data does not resolve`);
      return address;
    });
    // EIP-712: 0x1901 ‖ domainSeparator ‖ hashStruct(message); its keccak is TypedDataEncoder.hash.
    const preimage = TypedDataEncoder.encode(resolved.domain, types, resolved.value);
    return (await this.#signChecked(preimage)).serialized;
  }

  /** A new instance on `provider`, sharing this one's backend (its SDK client, or TLS agent and connections). */
  connect(provider: Provider | null): this {
    const Signer = this.constructor as new (backend: SigningBackend, provider: Provider | null) => this;
    return new Signer(this.backend, provider);
  }

  /** Frees the backend's connections (keep-alive sockets, SDK clients). */
  close(): void {
    this.backend.close();
  }

  toJSON() {
    return { type: this.constructor.name, address: this.address, backend: this.backend.description };
  }

  async #signChecked(preimageLike: string | Uint8Array): Promise<Signature> {
    const preimage = getBytes(preimageLike);
    const digest = keccak256(preimage);
    const signature = await this.backend.sign(preimage, digest);
    let recovered: string;
    try {
      recovered = recoverAddress(digest, signature);
    } catch (err) {
      throw new SignatureMismatchError(`${this.backend.description} returned a signature that recovers to no address`, {
        cause: err,
      });
    }
    if (recovered !== this.address) {
      throw new SignatureMismatchError(
        `${this.backend.description} returned a signature from ${recovered}, not from the configured key's address ${this.address}; refusing to use it`,
      );
    }
    return signature;
  }
}
