import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readKeystore, readTruststore } from '../../../src/relayer/signers/pkcs12.js';

// A JVM tuned for a short run: starts in about half the time.
const JVM_FAST = ['-J-XX:TieredStopAtLevel=1', '-J-XX:+UseSerialGC'];
// Looked up on PATH rather than run: starting a JVM just to ask costs seconds.
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
const haveKeytool = has('keytool');
const haveOpenssl = has('openssl');
if (!haveKeytool || !haveOpenssl)
  console.log('pkcs12 interop tests skipped: keytool (a JRE) or openssl is not installed');

let dir: string;
let keyFile: string;
let certFile: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'l2stack-pkcs12-'));
  keyFile = join(dir, 'key.pem');
  certFile = join(dir, 'cert.pem');
  if (haveOpenssl) {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        keyFile,
        '-out',
        certFile,
        '-subj',
        '/CN=l2stack test CA',
        '-days',
        '1',
      ],
      { stdio: 'ignore' },
    );
  }
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Operators bring stores made by Java's keytool (Web3Signer's own tooling) or by openssl, old and new.
describe.skipIf(!haveKeytool || !haveOpenssl)('PKCS12 files written by other tools', () => {
  it('behavior: a keytool truststore and a keytool EC client keystore are read and usable by TLS', () => {
    const trust = join(dir, 'keytool-trust.p12');
    execFileSync(
      'keytool',
      [
        ...JVM_FAST,
        '-importcert',
        '-noprompt',
        '-alias',
        'ca',
        '-file',
        certFile,
        '-keystore',
        trust,
        '-storetype',
        'PKCS12',
        '-storepass',
        'kt-trust-pw',
      ],
      { stdio: 'ignore' },
    );
    const keystore = join(dir, 'keytool-client.p12');
    execFileSync(
      'keytool',
      [
        ...JVM_FAST,
        '-genkeypair',
        '-alias',
        'client',
        '-keyalg',
        'EC',
        '-groupname',
        'secp256r1',
        '-dname',
        'CN=relayer',
        '-keystore',
        keystore,
        '-storetype',
        'PKCS12',
        '-storepass',
        'kt-ks-pw',
        '-keypass',
        'kt-ks-pw',
      ],
      { stdio: 'ignore' },
    );

    expect(readTruststore(trust, 'kt-trust-pw')).toEqual([expect.stringContaining('-----BEGIN CERTIFICATE-----')]);
    const identity = readKeystore(keystore, 'kt-ks-pw');
    expect(() =>
      createSecureContext({
        key: identity.key,
        cert: identity.certs.join(''),
        ca: readTruststore(trust, 'kt-trust-pw'),
      }),
    ).not.toThrow();
    expect(() => readTruststore(trust, 'wrong')).toThrow(`TLS truststore ${trust}: wrong password`);
  });

  it('behavior: an openssl -legacy (RC2) keystore, which OpenSSL 3 itself refuses as pfx, is read', () => {
    const legacy = join(dir, 'legacy.p12');
    execFileSync(
      'openssl',
      [
        'pkcs12',
        '-export',
        '-legacy',
        '-inkey',
        keyFile,
        '-in',
        certFile,
        '-out',
        legacy,
        '-passout',
        'pass:legacy-pw',
      ],
      { stdio: 'ignore' },
    );

    const identity = readKeystore(legacy, 'legacy-pw');
    expect(identity.certs).toHaveLength(1);
    expect(() => createSecureContext({ key: identity.key, cert: identity.certs.join('') })).not.toThrow();
  });
});
