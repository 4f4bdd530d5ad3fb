import { readFileSync } from 'node:fs';
import forge from 'node-forge';
import { BaseError } from '../../common/errors.js';

/**
 * A PKCS12 file could not be used. The message names the file and never the password (which is why the
 * underlying library error is summarised rather than attached verbatim when it could echo input).
 */
export class Pkcs12Error extends BaseError {
  override name = 'Pkcs12Error';
}

export interface ClientIdentity {
  /** PEM private key (PKCS#8 or PKCS#1), decrypted. */
  key: string;
  /** PEM certificates: the key's own certificate first, then the rest of the chain. */
  certs: string[];
}

/**
 * PKCS12 is read with node-forge rather than handed to OpenSSL as `pfx`: OpenSSL 3 (Node >= 17) refuses
 * the RC2/3DES encodings that older keytool and OpenSSL versions wrote by default, and forge lets us tell
 * "wrong password" apart from "not a PKCS12 file" in the error an operator sees.
 */
function open(path: string, password: string, what: string): forge.pkcs12.Pkcs12Pfx {
  let raw: Buffer;
  try {
    raw = readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT'
        ? 'the file does not exist'
        : code === 'EACCES'
          ? 'permission denied'
          : `cannot read it (${code ?? 'error'})`;
    throw new Pkcs12Error(`TLS ${what} ${path}: ${reason}`);
  }
  let asn1: forge.asn1.Asn1;
  try {
    asn1 = forge.asn1.fromDer(forge.util.createBuffer(raw.toString('binary')));
  } catch {
    throw new Pkcs12Error(`TLS ${what} ${path}: not a PKCS12 (DER) file`);
  }
  try {
    return forge.pkcs12.pkcs12FromAsn1(asn1, false, password);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // forge says "PKCS#12 MAC could not be verified. Invalid password?" or, for an unsigned file with an
    // encrypted key, "Unable to decrypt ... wrong password?".
    if (/password/i.test(message))
      throw new Pkcs12Error(`TLS ${what} ${path}: wrong password (the PKCS12 integrity check failed)`);
    throw new Pkcs12Error(`TLS ${what} ${path}: unsupported or corrupt PKCS12 file (${message.slice(0, 200)})`);
  }
}

function derToPem(label: string, asn1: forge.asn1.Asn1): string {
  const b64 = Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary').toString('base64');
  return `-----BEGIN ${label}-----\n${b64.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`;
}

function certPem(bag: forge.pkcs12.Bag): string {
  // forge only models RSA certificates; for EC ones it leaves the raw ASN.1, which is just as good for TLS.
  return bag.cert ? forge.pki.certificateToPem(bag.cert) : derToPem('CERTIFICATE', bag.asn1);
}

function keyPem(bag: forge.pkcs12.Bag): string {
  if (bag.key) return forge.pki.privateKeyInfoToPem(forge.pki.wrapRsaPrivateKey(forge.pki.privateKeyToAsn1(bag.key)));
  return derToPem('PRIVATE KEY', bag.asn1);
}

function localKeyId(bag: forge.pkcs12.Bag): string | undefined {
  const ids = (bag.attributes as { localKeyId?: string[] } | undefined)?.localKeyId;
  return ids?.[0];
}

function bags(p12: forge.pkcs12.Pkcs12Pfx): forge.pkcs12.Bag[] {
  return p12.safeContents.flatMap((contents) => contents.safeBags);
}

const KEY_BAGS = new Set([forge.pki.oids.keyBag, forge.pki.oids.pkcs8ShroudedKeyBag]);

/** The client key and certificate chain of a mutual-TLS keystore. */
export function readKeystore(path: string, password: string): ClientIdentity {
  const all = bags(open(path, password, 'keystore'));
  const keyBag = all.find((b) => KEY_BAGS.has(b.type));
  if (!keyBag)
    throw new Pkcs12Error(
      `TLS keystore ${path}: contains no private key (a keystore needs the client key and certificate)`,
    );
  const certBags = all.filter((b) => b.type === forge.pki.oids.certBag);
  // The key's own certificate must come first or TLS fails with "key values mismatch"; PKCS12 pairs them by localKeyId.
  const id = localKeyId(keyBag);
  const own = certBags.find((b) => id !== undefined && localKeyId(b) === id) ?? certBags[0];
  if (!own) throw new Pkcs12Error(`TLS keystore ${path}: contains no certificate for its private key`);
  return { key: keyPem(keyBag), certs: [own, ...certBags.filter((b) => b !== own)].map(certPem) };
}

/** The CA certificates of a truststore, as PEM, to verify the remote signer's server certificate. */
export function readTruststore(path: string, password: string): string[] {
  const certs = bags(open(path, password, 'truststore')).filter((b) => b.type === forge.pki.oids.certBag);
  if (certs.length === 0) throw new Pkcs12Error(`TLS truststore ${path}: contains no certificates`);
  return certs.map(certPem);
}
