import { SECP256K1_N } from './signers/der.js';

/**
 * The signer variables' own checks (`*_SIGNER_*`): the extra private keys of a direction and what each
 * SIGNER_TYPE requires. A problem names the variable and, for a list, the entry's position, never a key.
 */

export const SIGNER_TYPES = ['private-key', 'remote-signer', 'kms'] as const;
export type SignerType = (typeof SIGNER_TYPES)[number];
export type SignerConfig =
  | { type: 'private-key'; privateKey: string }
  | {
      type: 'remote-signer';
      endpoint: string;
      publicKey: string;
      /** Present only when the keystore path is set. */
      tls:
        | { keystorePath: string; keystorePassword: string; truststorePath: string; truststorePassword: string }
        | undefined;
    }
  | { type: 'kms'; keyId: string; region: string | undefined };

/** Most keys `*_SIGNER_PRIVATE_KEYS` may list (each one more nonce stream, balance read and receipt scan). */
export const MAX_EXTRA_SIGNER_KEYS = 16;
/**
 * The entries of `*_SIGNER_PRIVATE_KEYS` (comma-separated, blanks around commas ignored), lower-cased, or the
 * problem found: one line naming the variable and the 1-based position of each bad entry, never a key.
 */
export function parseExtraKeys(
  raw: string | undefined,
  name: string,
  single: string | undefined,
): { keys: string[]; problems: string[] } {
  if (raw === undefined) return { keys: [], problems: [] };
  const entries = raw.split(',').map((e) => e.trim());
  const issues: string[] = [];
  if (entries.length > MAX_EXTRA_SIGNER_KEYS)
    issues.push(`lists ${entries.length} keys, more than the ${MAX_EXTRA_SIGNER_KEYS} allowed`);
  const seen = new Map<string, number>();
  if (single !== undefined) seen.set(single.toLowerCase(), 0);
  const keys: string[] = [];
  for (const [i, e] of entries.entries()) {
    const at = `entry ${i + 1} of ${entries.length}`;
    if (!/^0x[0-9a-fA-F]{64}$/.test(e)) {
      issues.push(`${at} is ${e === '' ? 'empty' : 'malformed (not 0x followed by 64 hex digits)'}`);
      continue;
    }
    const key = e.toLowerCase();
    const k = BigInt(key);
    if (k === 0n || k >= SECP256K1_N) {
      issues.push(`${at} is not a valid secp256k1 private key (0, or not below the curve order)`);
      continue;
    }
    const before = seen.get(key);
    if (before !== undefined) {
      issues.push(`${at} repeats ${before === 0 ? name.replace(/_KEYS$/, '_KEY') : `entry ${before}`}`);
      continue;
    }
    seen.set(key, i + 1);
    keys.push(key);
  }
  if (issues.length === 0) return { keys, problems: [] };
  return {
    keys,
    problems: [
      `${name}: ${issues.join('; ')}: set it to a comma-separated list of at most ${MAX_EXTRA_SIGNER_KEYS} distinct private keys, each 0x followed by 64 hex digits (32 bytes)`,
    ],
  };
}

/** What the signer of layer `p` (L1 or L2) still needs for its SIGNER_TYPE, one line per missing variable. */
export function signerProblems(v: Record<string, unknown>, p: string, needed: boolean): string[] {
  const type = v[`${p}_SIGNER_TYPE`] as string | undefined;
  if (type === undefined || !needed) return [];
  const problems: string[] = [];
  const missing = (name: string, form: string) => {
    if (v[name] === undefined) problems.push(`${name}: required when ${p}_SIGNER_TYPE is ${type}: set it to ${form}`);
  };
  if (type === 'private-key') missing(`${p}_SIGNER_PRIVATE_KEY`, '0x followed by 64 hex digits (32 bytes)');
  if (type !== 'private-key' && v[`${p}_SIGNER_PRIVATE_KEYS`] !== undefined) {
    problems.push(
      `${p}_SIGNER_PRIVATE_KEYS: only valid when ${p}_SIGNER_TYPE is private-key (it is ${type}): unset it`,
    );
  }
  if (type === 'kms') missing(`${p}_KMS_KEY_ID`, 'the key ID or resource name');
  if (type === 'remote-signer') {
    missing(`${p}_REMOTE_SIGNER_ENDPOINT`, 'an absolute http or https URL');
    missing(`${p}_REMOTE_SIGNER_PUBLIC_KEY`, 'a 0x-prefixed hex public key');
    if (v[`${p}_REMOTE_SIGNER_TLS_KEYSTORE_PATH`] !== undefined) {
      const tls = `${p}_REMOTE_SIGNER_TLS_KEYSTORE_PATH is set`;
      for (const name of ['KEYSTORE_PASSWORD', 'TRUSTSTORE_PATH', 'TRUSTSTORE_PASSWORD']) {
        const full = `${p}_REMOTE_SIGNER_TLS_${name}`;
        if (v[full] === undefined) problems.push(`${full}: required when ${tls}: set it to a non-empty string`);
      }
    }
  }
  return problems;
}

/** The signer its `*_SIGNER_TYPE` names, from already-checked values (`get` reads the chain's `<L1|L2>_<suffix>`). */
export function signerConfigFrom(get: <T>(suffix: string) => T): SignerConfig {
  const type = get<SignerType>('SIGNER_TYPE');
  if (type === 'private-key') return { type, privateKey: get<string>('SIGNER_PRIVATE_KEY') };
  if (type === 'kms') return { type, keyId: get<string>('KMS_KEY_ID'), region: get<string | undefined>('KMS_REGION') };
  const keystorePath = get<string | undefined>('REMOTE_SIGNER_TLS_KEYSTORE_PATH');
  return {
    type,
    endpoint: get<string>('REMOTE_SIGNER_ENDPOINT'),
    publicKey: get<string>('REMOTE_SIGNER_PUBLIC_KEY'),
    tls:
      keystorePath === undefined
        ? undefined
        : {
            keystorePath,
            keystorePassword: get<string>('REMOTE_SIGNER_TLS_KEYSTORE_PASSWORD'),
            truststorePath: get<string>('REMOTE_SIGNER_TLS_TRUSTSTORE_PATH'),
            truststorePassword: get<string>('REMOTE_SIGNER_TLS_TRUSTSTORE_PASSWORD'),
          },
  };
}
