import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';

/** A certificate and its key, as forge objects and PEM. */
interface Issued {
  cert: forge.pki.Certificate;
  key: forge.pki.rsa.PrivateKey;
  certPem: string;
  keyPem: string;
}

let serial = 1;

function issue(subjectCn: string, issuer: Issued | 'self', extensions: object[]): Issued {
  // forge delegates RSA key generation to node:crypto when it is available, so this stays fast.
  const keys = forge.pki.rsa.generateKeyPair({ bits: 2048, e: 0x10001 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = (serial++).toString(16).padStart(2, '0');
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 24 * 3600_000);
  const subject = [{ name: 'commonName', value: subjectCn }];
  cert.setSubject(subject);
  cert.setIssuer(issuer === 'self' ? subject : issuer.cert.subject.attributes);
  cert.setExtensions(extensions);
  cert.sign(issuer === 'self' ? keys.privateKey : issuer.key, forge.md.sha256.create());
  return {
    cert,
    key: keys.privateKey,
    certPem: forge.pki.certificateToPem(cert),
    keyPem: forge.pki.privateKeyToPem(keys.privateKey),
  };
}

const caExtensions = [
  { name: 'basicConstraints', cA: true, critical: true },
  { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
];

function writeP12(
  path: string,
  key: forge.pki.rsa.PrivateKey | null,
  certs: forge.pki.Certificate[],
  password: string,
): string {
  const asn1 = forge.pkcs12.toPkcs12Asn1(key, certs, password, { algorithm: 'aes256', generateLocalKeyId: true });
  writeFileSync(path, Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary'));
  return path;
}

export interface TlsFixture {
  dir: string;
  ca: Issued;
  server: Issued;
  keystorePath: string;
  keystorePassword: string;
  truststorePath: string;
  truststorePassword: string;
  /** A client certificate issued by a CA the server does not trust. */
  wrongKeystorePath: string;
  wrongKeystorePassword: string;
}

/**
 * Generates, at run time, a CA, a server and a client certificate, and a foreign CA with its own client certificate.
 */
export function createTlsFixture(): TlsFixture {
  const dir = mkdtempSync(join(tmpdir(), 'l2stack-signer-tls-'));
  const ca = issue('l2stack test CA', 'self', caExtensions);
  const server = issue('localhost', ca, [
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        { type: 2, value: 'localhost' },
        { type: 7, ip: '127.0.0.1' },
      ],
    },
  ]);
  const clientExtensions = [
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', clientAuth: true },
  ];
  const client = issue('relayer', ca, clientExtensions);
  const foreignCa = issue('some other CA', 'self', caExtensions);
  const wrongClient = issue('relayer', foreignCa, clientExtensions);
  const keystorePassword = 'keystore-pw-4f1c';
  const truststorePassword = 'truststore-pw-9b2e';
  const wrongKeystorePassword = 'wrong-keystore-pw-77d0';
  return {
    dir,
    ca,
    server,
    keystorePath: writeP12(join(dir, 'client.p12'), client.key, [client.cert, ca.cert], keystorePassword),
    keystorePassword,
    truststorePath: writeP12(join(dir, 'truststore.p12'), null, [ca.cert], truststorePassword),
    truststorePassword,
    wrongKeystorePath: writeP12(
      join(dir, 'wrong-client.p12'),
      wrongClient.key,
      [wrongClient.cert],
      wrongKeystorePassword,
    ),
    wrongKeystorePassword,
  };
}
