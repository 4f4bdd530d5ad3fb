import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createSecureContext } from 'node:tls';
import { Signature, SigningKey, computeAddress, hexlify, toBeHex, type Provider } from 'ethers';
import { BaseError, RetryableError } from '../../common/errors.js';
import { BackendSigner, NETWORK_CODES, type SigningBackend } from './base.js';
import { normalizeLowS } from './der.js';
import { readKeystore, readTruststore } from './pkcs12.js';
import { probeTlsRejection, type TlsMaterial } from './tls-probe.js';

/**
 * Mutual TLS material, as PKCS12 files (what Web3Signer and Java services are usually given). The
 * keystore holds our client key and certificate; the truststore the CA(s) that issued the signer's
 * server certificate (without one, the system roots are used).
 */
export interface RemoteSignerTlsOptions {
  keystorePath?: string;
  keystorePassword?: string;
  truststorePath?: string;
  truststorePassword?: string;
}

export interface RemoteSignerOptions {
  /** Base URL of the Web3Signer, http or https; a path prefix (a signer behind a proxy) is kept. */
  endpoint: string;
  /**
   * secp256k1 public key of the account: 0x + 64 bytes (x‖y, Web3Signer's form), 65 bytes (04‖x‖y) or 33 (compressed).
   */
  publicKey: string;
  tls?: RemoteSignerTlsOptions;
  /** Deadline of one signing request, connection and TLS handshake included. Default 10 s. */
  timeoutMs?: number;
}

/** A remote-signer problem that retrying will not fix (configuration, TLS trust, unknown key, bad answer). */
export class RemoteSignerError extends BaseError {
  override name = 'RemoteSignerError';
}

/** The signer could not be reached or failed on its side; the claim can be tried again later. */
export class RemoteSignerUnavailableError extends RetryableError {
  override name = 'RemoteSignerUnavailableError';
}

const MAX_RESPONSE_BYTES = 64 * 1024;

/** The endpoint as it may appear in errors and logs: no user-info, no query string. */
export function redactEndpoint(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/$/, '')}`;
}

function keyIdentity(publicKey: string): { identifier: string; address: string } {
  let uncompressed: string;
  try {
    uncompressed = SigningKey.computePublicKey(publicKey.startsWith('0x') ? publicKey : `0x${publicKey}`, false);
  } catch (err) {
    throw new RemoteSignerError(
      'remote signer public key is not a secp256k1 public key: expected 0x followed by 64 bytes (x‖y), 65 bytes (04‖x‖y) or 33 bytes (compressed)',
      { cause: err },
    );
  }
  // Web3Signer names eth1 keys by the 64-byte uncompressed point without the 04 prefix, lower-case.
  return { identifier: `0x${uncompressed.slice(4).toLowerCase()}`, address: computeAddress(uncompressed) };
}

function tlsMaterial(tls: RemoteSignerTlsOptions): TlsMaterial {
  const out: TlsMaterial = {};
  if (tls.keystorePath !== undefined) {
    if (tls.keystorePassword === undefined)
      throw new RemoteSignerError(`TLS keystore ${tls.keystorePath}: a password is required`);
    const identity = readKeystore(tls.keystorePath, tls.keystorePassword);
    out.key = identity.key;
    // One string: in an array, Node would read each entry as the chain of a separate key.
    out.cert = identity.certs.join('');
    try {
      createSecureContext({ key: out.key, cert: out.cert });
    } catch (err) {
      throw new RemoteSignerError(
        `TLS keystore ${tls.keystorePath}: OpenSSL cannot use its key and certificate (${(err as Error).message})`,
      );
    }
  }
  if (tls.truststorePath !== undefined) {
    if (tls.truststorePassword === undefined)
      throw new RemoteSignerError(`TLS truststore ${tls.truststorePath}: a password is required`);
    out.ca = readTruststore(tls.truststorePath, tls.truststorePassword);
  }
  return out;
}

/**
 * Web3Signer's eth1 signing API: `POST {endpoint}/api/v1/eth1/sign/{identifier}` with `{"data": "0x…"}`
 * answers `text/plain` r ‖ s ‖ v (65 bytes hex, v = 27/28). Web3Signer keccak-hashes `data` itself, so
 * we send the preimage (the unsigned serialized transaction, the EIP-191 or EIP-712 payload), not the
 * digest. This REST call, rather than JSON-RPC `eth_signTransaction`, is used because it signs exactly the
 * bytes we built: eth_signTransaction needs a downstream node to fill fields, re-encodes the transaction
 * on the signer's side and only knows the transaction types that version of the signer knows.
 */
export class Web3SignerBackend implements SigningBackend {
  readonly address: string;
  readonly description: string;
  readonly identifier: string;
  readonly #signUrl: URL;
  readonly #agent: HttpAgent;
  readonly #authorization: string | undefined;
  readonly #timeoutMs: number;
  readonly #tls: TlsMaterial = {};

  constructor(options: RemoteSignerOptions) {
    let url: URL;
    try {
      url = new URL(options.endpoint);
    } catch {
      throw new RemoteSignerError('remote signer endpoint is not an absolute URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new RemoteSignerError(`remote signer endpoint ${redactEndpoint(url)}: only http and https are supported`);
    this.description = `remote signer ${redactEndpoint(url)}`;
    ({ identifier: this.identifier, address: this.address } = keyIdentity(options.publicKey));
    // Credentials in the URL go into a header so they are never part of a logged URL.
    if (url.username || url.password) {
      this.#authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
      url.username = '';
      url.password = '';
    }
    const base = new URL(url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`, url);
    this.#signUrl = new URL(`api/v1/eth1/sign/${this.identifier}`, base);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    const hasTls = options.tls && Object.values(options.tls).some((v) => v !== undefined);
    if (url.protocol === 'http:') {
      if (hasTls)
        throw new RemoteSignerError(
          `${this.description}: TLS keystore/truststore given but the endpoint is http; use an https URL`,
        );
      this.#agent = new HttpAgent({ keepAlive: true });
    } else {
      // Read the PKCS12 files now: a wrong path or password must stop start-up, not the first claim.
      if (hasTls) this.#tls = tlsMaterial(options.tls!);
      this.#agent = new HttpsAgent({ keepAlive: true, ...this.#tls });
    }
  }

  async sign(preimage: Uint8Array): Promise<Signature> {
    const { status, text } = await this.#post(JSON.stringify({ data: hexlify(preimage) }));
    if (status === 200) return this.#parseSignature(text);
    const detail = text.trim().slice(0, 200);
    const suffix = detail ? `: ${detail}` : '';
    if (status === 404)
      throw new RemoteSignerError(`${this.description} does not hold the key ${this.identifier} (HTTP 404)`);
    if (status >= 500 || status === 429)
      throw new RemoteSignerUnavailableError(`${this.description} failed with HTTP ${status}${suffix}`);
    throw new RemoteSignerError(`${this.description} refused the signing request with HTTP ${status}${suffix}`);
  }

  close(): void {
    this.#agent.destroy();
  }

  #parseSignature(text: string): Signature {
    const hex = text.trim().replace(/^"|"$/g, '');
    if (!/^0x[0-9a-fA-F]{130}$/.test(hex)) {
      throw new RemoteSignerError(
        `${this.description} answered with something that is not a 65-byte hex signature: ${hex.slice(0, 80)}`,
      );
    }
    let s = BigInt(`0x${hex.slice(66, 130)}`);
    let v = parseInt(hex.slice(130), 16);
    // Web3Signer already answers low-s; another compatible signer might not. The mirrored s recovers the
    // same key with the other parity, so flip v with it (the recovery check in BackendSigner has the last word).
    if (normalizeLowS(s) !== s) {
      s = normalizeLowS(s);
      v = v === 0 || v === 27 ? 28 : 27;
    }
    try {
      return Signature.from({ r: `0x${hex.slice(2, 66)}`, s: toBeHex(s, 32), v });
    } catch (err) {
      throw new RemoteSignerError(`${this.description} returned an invalid signature (bad r or v)`, { cause: err });
    }
  }

  #post(body: string): Promise<{ status: number; text: string }> {
    const send = this.#signUrl.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'text/plain, application/json',
    };
    if (this.#authorization) headers.authorization = this.#authorization;
    return new Promise((resolve, reject) => {
      const fail = (err: unknown) => void this.#explain(err).then(reject);
      let req: ClientRequest;
      const onResponse = (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES)
            req.destroy(
              new RemoteSignerError(`${this.description} sent a response larger than ${MAX_RESPONSE_BYTES} bytes`),
            );
          else chunks.push(chunk);
        });
        res.on('error', fail);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      };
      try {
        req = send(this.#signUrl, { method: 'POST', agent: this.#agent, headers }, onResponse);
      } catch (err) {
        // The agent builds the TLS context lazily, on the first request; its errors are thrown, not emitted.
        fail(err);
        return;
      }
      const timer = setTimeout(
        () =>
          req.destroy(
            new RemoteSignerUnavailableError(`${this.description} did not answer within ${this.#timeoutMs} ms`),
          ),
        this.#timeoutMs,
      );
      req.on('close', () => clearTimeout(timer));
      req.on('error', fail);
      req.end(body);
    });
  }

  /** Like #classify, but first finds out whether a reset was the server refusing our TLS client certificate. */
  async #explain(err: unknown): Promise<BaseError> {
    const code = (err as NodeJS.ErrnoException).code;
    if (this.#signUrl.protocol === 'https:' && (code === 'ECONNRESET' || code === 'EPIPE')) {
      const probe = await probeTlsRejection(this.#signUrl, this.#tls, Math.min(this.#timeoutMs, 2_000));
      if (probe?.kind === 'alert') return this.#classify(probe.error);
      if (probe?.kind === 'closed-after-handshake') {
        return new RemoteSignerError(
          `${this.description} closed the connection right after the TLS handshake, before any request: it does not accept our client certificate (or we sent none); check the TLS keystore`,
          { cause: err },
        );
      }
    }
    return this.#classify(err);
  }

  /** Turns socket and TLS errors into ours, saying which side of the TLS trust failed. */
  #classify(err: unknown): BaseError {
    if (err instanceof BaseError) return err;
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const message = err instanceof Error ? err.message : String(err);
    if (/^ERR_SSL_.*ALERT/.test(code) || /alert/i.test(message)) {
      return new RemoteSignerError(
        `${this.description} refused the TLS handshake (${code || message}): it does not accept our client certificate (or we sent none); check the TLS keystore`,
        { cause: err },
      );
    }
    if (/CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS/.test(code)) {
      return new RemoteSignerError(
        `${this.description}: its TLS server certificate could not be verified (${code}); check the TLS truststore and the endpoint host name`,
        { cause: err },
      );
    }
    if (NETWORK_CODES.has(code))
      return new RemoteSignerUnavailableError(`${this.description} is unreachable (${code})`, { cause: err });
    return new RemoteSignerUnavailableError(`${this.description}: request failed (${code || message})`, { cause: err });
  }
}

/** An ethers v6 signer whose key is held by a Web3Signer-compatible signing service. */
export class RemoteSigner extends BackendSigner {
  declare readonly backend: Web3SignerBackend;

  constructor(options: RemoteSignerOptions | Web3SignerBackend, provider?: Provider | null) {
    super(options instanceof Web3SignerBackend ? options : new Web3SignerBackend(options), provider);
  }
}
