import { GetPublicKeyCommand, KMSClient, SignCommand, type KMSClientConfig } from '@aws-sdk/client-kms';
import { Signature, computeAddress, getBytes, recoverAddress, toBeHex, type Provider } from 'ethers';
import { BaseError, RetryableError } from '../../common/errors.js';
import { BackendSigner, NETWORK_CODES, type SigningBackend } from './base.js';
import { normalizeLowS, parseDerSignature, uncompressedPointFromSpki } from './der.js';

export interface KmsSignerOptions {
  /** Key id, alias (`alias/…`) or ARN of an ECC_SECG_P256K1 SIGN_VERIFY key. */
  keyId: string;
  /** Unset: the SDK's own default (AWS_REGION, the shared config file, instance metadata). */
  region?: string;
  /** A VPC endpoint or, in tests, a local KMS-compatible server. */
  endpoint?: string;
  /** Unset: the SDK's default credential chain (environment, shared files, instance or task role). */
  credentials?: KMSClientConfig['credentials'];
  /** Deadline of one KMS request. Default 10 s. */
  timeoutMs?: number;
}

/** A KMS problem that retrying will not fix: unknown or disabled key, wrong key type, no permission. */
export class KmsSignerError extends BaseError {
  override name = 'KmsSignerError';
}

/** KMS throttled us, failed on its side, or could not be reached; worth another try later. */
export class KmsSignerUnavailableError extends RetryableError {
  override name = 'KmsSignerUnavailableError';
}

/** Maps SDK errors by their own fault marker: `$fault: 'server'`, throttling and network failures are transient. */
function classify(err: unknown, what: string): BaseError {
  if (err instanceof BaseError) return err;
  const e = err as { name?: string; message?: string; code?: string; $fault?: string };
  const reason = `${e.name ?? 'Error'}: ${(e.message ?? String(err)).slice(0, 300)}`;
  const transient =
    e.$fault === 'server' ||
    e.name === 'ThrottlingException' ||
    e.name === 'TimeoutError' ||
    NETWORK_CODES.has(e.code ?? '');
  return transient
    ? new KmsSignerUnavailableError(`${what} (${reason})`, { cause: err })
    : new KmsSignerError(`${what} (${reason})`, { cause: err });
}

/**
 * An asymmetric secp256k1 key in AWS KMS (or any service speaking its JSON protocol). The private key never
 * leaves KMS: we ask for the public key once (for the address) and for one ECDSA signature per digest.
 */
export class KmsBackend implements SigningBackend {
  // Private so that logging the backend can never serialise the SDK client and its credentials.
  readonly #client: KMSClient;

  private constructor(
    client: KMSClient,
    readonly keyId: string,
    readonly address: string,
    readonly description: string,
  ) {
    this.#client = client;
  }

  /** Reads the public key (and so the address) up front: a wrong key id or key type stops start-up. */
  static async open(options: KmsSignerOptions): Promise<KmsBackend> {
    const timeout = options.timeoutMs ?? 10_000;
    const config: KMSClientConfig = {
      requestHandler: {
        connectionTimeout: Math.min(timeout, 5_000),
        requestTimeout: timeout,
        throwOnRequestTimeout: true,
      },
    };
    // Only set what was given, so the SDK's own defaults (region, credential chain) apply otherwise.
    if (options.region !== undefined) config.region = options.region;
    if (options.endpoint !== undefined) config.endpoint = options.endpoint;
    if (options.credentials !== undefined) config.credentials = options.credentials;
    let where = '';
    if (options.endpoint !== undefined) {
      try {
        where = ` at ${new URL(options.endpoint).host}`;
      } catch {
        throw new KmsSignerError('KMS endpoint is not an absolute URL');
      }
    }
    const description = `KMS key ${options.keyId}${where}`;
    const client = new KMSClient(config);
    try {
      const out = await client.send(new GetPublicKeyCommand({ KeyId: options.keyId })).catch((err: unknown) => {
        throw classify(err, `${description}: GetPublicKey failed`);
      });
      if (out.KeySpec !== undefined && out.KeySpec !== 'ECC_SECG_P256K1') {
        throw new KmsSignerError(`${description} is a ${out.KeySpec} key; Ethereum signing needs ECC_SECG_P256K1`);
      }
      if (out.KeyUsage !== undefined && out.KeyUsage !== 'SIGN_VERIFY') {
        throw new KmsSignerError(`${description} has key usage ${out.KeyUsage}; signing needs SIGN_VERIFY`);
      }
      if (!out.PublicKey) throw new KmsSignerError(`${description}: GetPublicKey returned no public key`);
      let point: string;
      try {
        point = uncompressedPointFromSpki(out.PublicKey);
      } catch (err) {
        throw new KmsSignerError(`${description}: unusable public key (${(err as Error).message})`, { cause: err });
      }
      return new KmsBackend(client, options.keyId, computeAddress(point), description);
    } catch (err) {
      client.destroy();
      throw err;
    }
  }

  /** KMS signs the 32-byte digest as given (MessageType DIGEST): no second hash on its side. */
  async sign(_preimage: Uint8Array, digest: string): Promise<Signature> {
    const out = await this.#client
      .send(
        new SignCommand({
          KeyId: this.keyId,
          Message: getBytes(digest),
          MessageType: 'DIGEST',
          SigningAlgorithm: 'ECDSA_SHA_256',
        }),
      )
      .catch((err: unknown) => {
        throw classify(err, `${this.description}: Sign failed`);
      });
    if (!out.Signature) throw new KmsSignerError(`${this.description}: Sign returned no signature`);
    let r: bigint;
    let s: bigint;
    try {
      ({ r, s } = parseDerSignature(out.Signature));
    } catch (err) {
      throw new KmsSignerError(`${this.description}: unusable signature (${(err as Error).message})`, { cause: err });
    }
    const low = normalizeLowS(s);
    // ECDSA drops the parity of R; Ethereum needs it back (v), and only one of the two candidates recovers our key.
    for (const v of [27, 28]) {
      const signature = Signature.from({ r: toBeHex(r, 32), s: toBeHex(low, 32), v });
      let recovered: string | undefined;
      try {
        recovered = recoverAddress(digest, signature);
      } catch {
        recovered = undefined; // r is not the x of a curve point for this parity
      }
      if (recovered === this.address) return signature;
    }
    throw new KmsSignerError(
      `${this.description}: the signature recovers to ${this.address} with neither recovery id; was it made by this key?`,
    );
  }

  close(): void {
    this.#client.destroy();
  }
}

/** An ethers v6 signer whose secp256k1 key is held by AWS KMS. Build it with `KmsSigner.create`. */
export class KmsSigner extends BackendSigner {
  declare readonly backend: KmsBackend;

  constructor(backend: KmsBackend, provider?: Provider | null) {
    super(backend, provider);
  }

  static async create(options: KmsSignerOptions, provider?: Provider | null): Promise<KmsSigner> {
    return new KmsSigner(await KmsBackend.open(options), provider);
  }
}
