import type { Provider } from 'ethers';
import { KmsSigner, type KmsSignerOptions } from './kms-signer.js';
import { RemoteSigner, type RemoteSignerOptions } from './remote-signer.js';

/*
 * The signers whose key a backend holds (Web3Signer, AWS KMS), as createSigner (../signer.ts) loads them: by a
 * dynamic import, only when the relayer is configured for one, so a private-key relayer never loads the AWS SDK
 * nor node-forge.
 */

export { BackendSigner, SignatureMismatchError, type SigningBackend } from './base.js';
export { KmsSigner, KmsSignerError, KmsSignerUnavailableError, type KmsSignerOptions } from './kms-signer.js';
export { Pkcs12Error } from './pkcs12.js';
export {
  RemoteSigner,
  RemoteSignerError,
  RemoteSignerUnavailableError,
  type RemoteSignerOptions,
  type RemoteSignerTlsOptions,
} from './remote-signer.js';

/**
 * A Web3Signer-backed signer connected to `provider`. Synchronous work only (the PKCS12 files are read here, so a wrong
 * path or password fails at start-up); the signer itself is first contacted on the first signature.
 */
export function createRemoteSigner(options: RemoteSignerOptions, provider: Provider | null): RemoteSigner {
  return new RemoteSigner(options, provider);
}

/** A KMS-backed signer connected to `provider`; asks KMS for the public key (the address) before returning. */
export function createKmsSigner(options: KmsSignerOptions, provider: Provider | null): Promise<KmsSigner> {
  return KmsSigner.create(options, provider);
}
