import { rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { SigningKey, Transaction, Wallet, toBeHex, verifyMessage, type JsonRpcProvider } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProvider } from '../../../src/common/chain/provider.js';
import { RetryableError } from '../../../src/common/errors.js';
import { startAnvil, type Anvil } from '../../../src/devnet/anvil.js';
import {
  createRemoteSigner,
  Pkcs12Error,
  RemoteSignerError,
  SignatureMismatchError,
} from '../../../src/relayer/signers/backends.js';
import type { RemoteSigner } from '../../../src/relayer/signers/remote-signer.js';
import { createTlsFixture, type TlsFixture } from './tls-fixtures.js';
import { startFakeWeb3Signer, web3SignerIdentifier, type FakeWeb3Signer } from './web3signer-server.js';
import { mined } from '../../../src/common/chain/mined.js';

const CHAIN_ID = 31_337;
const key = new SigningKey(Wallet.createRandom().privateKey);
const otherKey = new SigningKey(Wallet.createRandom().privateKey);
const identifier = web3SignerIdentifier(key);

let anvil: Anvil;
let provider: JsonRpcProvider;
let tls: TlsFixture;
let signerServer: FakeWeb3Signer;
const signers: RemoteSigner[] = [];

function mtlsSigner(overrides: Partial<TlsFixture> = {}, endpoint = signerServer.url): RemoteSigner {
  const f = { ...tls, ...overrides };
  const signer = createRemoteSigner(
    {
      endpoint,
      publicKey: identifier,
      tls: {
        keystorePath: f.keystorePath,
        keystorePassword: f.keystorePassword,
        truststorePath: f.truststorePath,
        truststorePassword: f.truststorePassword,
      },
    },
    provider,
  );
  signers.push(signer);
  return signer;
}

beforeAll(async () => {
  tls = createTlsFixture();
  anvil = await startAnvil({ port: 0, chainId: CHAIN_ID });
  provider = createProvider(anvil.url, CHAIN_ID, { pollingInterval: 50 });
  signerServer = await startFakeWeb3Signer({
    keys: new Map([[identifier, key]]),
    tls: {
      key: tls.server.keyPem,
      cert: tls.server.certPem,
      ca: [tls.ca.certPem],
      requestCert: true,
      rejectUnauthorized: true,
    },
  });
});

afterAll(async () => {
  for (const s of signers) s.close();
  provider?.destroy();
  await signerServer?.close();
  await anvil?.stop();
  if (tls) rmSync(tls.dir, { recursive: true, force: true });
});

describe('RemoteSigner over mutual TLS', () => {
  it('behavior: a transaction signed through the remote signer is mined by anvil from the key’s address', async () => {
    const signer = mtlsSigner();
    expect(signer.address).toBe(new Wallet(key.privateKey).address);
    await provider.send('anvil_setBalance', [signer.address, toBeHex(10n ** 18n)]);
    const recipient = Wallet.createRandom().address;
    const before = signerServer.requests.length;

    const response = await signer.sendTransaction({ to: recipient, value: 12_345n });
    const receipt = await mined(response);

    expect(receipt?.status).toBe(1);
    expect(receipt?.from).toBe(signer.address);
    expect(await provider.getBalance(recipient)).toBe(12_345n);
    // Web3Signer hashes what it is given, so the wire carries the unsigned serialized transaction.
    const sent = signerServer.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.path).toBe(`/api/v1/eth1/sign/${identifier}`);
    const signed = Transaction.from(await provider.send('eth_getRawTransactionByHash', [response.hash]));
    expect(sent[0]!.data).toBe(signed.unsignedSerialized);
  });

  it('behavior: signMessage gives an EIP-191 signature that verifies to the address', async () => {
    const signer = mtlsSigner();
    const signature = await signer.signMessage('claim message 7');
    expect(verifyMessage('claim message 7', signature)).toBe(signer.address);
  });

  it('behavior: a logged signer shows its address and endpoint, never key material or passwords', () => {
    const signer = mtlsSigner();
    const shown = `${JSON.stringify(signer)}\n${inspect(signer, { depth: 6 })}`;
    expect(JSON.parse(JSON.stringify(signer))).toEqual({
      type: 'RemoteSigner',
      address: signer.address,
      backend: `remote signer ${signerServer.url}`,
    });
    for (const secret of [tls.keystorePassword, tls.truststorePassword, 'PRIVATE KEY'])
      expect(shown).not.toContain(secret);
  });

  it('error: a client certificate from a CA the signer does not trust is refused', async () => {
    const signer = mtlsSigner({ keystorePath: tls.wrongKeystorePath, keystorePassword: tls.wrongKeystorePassword });
    const tx = {
      type: 2,
      chainId: CHAIN_ID,
      nonce: 0,
      to: Wallet.createRandom().address,
      gasLimit: 21_000n,
      maxFeePerGas: 10n ** 9n,
      maxPriorityFeePerGas: 1n,
    };
    const err = await signer.signTransaction(tx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteSignerError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^remote signer ${signerServer.url} .*it does not accept our client certificate \\(or we sent none\\); check the TLS keystore$`,
      ),
    );
  });

  it('error: connecting without a client certificate is refused the same way', async () => {
    const signer = createRemoteSigner(
      {
        endpoint: signerServer.url,
        publicKey: identifier,
        tls: { truststorePath: tls.truststorePath, truststorePassword: tls.truststorePassword },
      },
      provider,
    );
    signers.push(signer);
    await expect(signer.signMessage('x')).rejects.toThrow(
      /does not accept our client certificate \(or we sent none\); check the TLS keystore$/,
    );
  });

  it('error: a wrong truststore password names the truststore, never the password', () => {
    const wrong = 'not-the-truststore-pw-5521';
    let err: unknown;
    try {
      mtlsSigner({ truststorePassword: wrong });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(Pkcs12Error);
    const text = `${(err as Error).message}\n${(err as Error).stack}\n${JSON.stringify(err)}`;
    expect((err as Error).message).toBe(
      `TLS truststore ${tls.truststorePath}: wrong password (the PKCS12 integrity check failed)`,
    );
    expect(text).not.toContain(wrong);
    expect(text).not.toContain(tls.truststorePassword);
  });

  it('error: a keystore that does not exist is named', () => {
    expect(() => mtlsSigner({ keystorePath: `${tls.dir}/missing.p12` })).toThrow(
      `TLS keystore ${tls.dir}/missing.p12: the file does not exist`,
    );
  });

  it('error: a server certificate not issued by the truststore CA is refused', async () => {
    // The wrong client keystore holds only a certificate of the foreign CA: as a truststore it trusts the wrong issuer.
    const signer = mtlsSigner({ truststorePath: tls.wrongKeystorePath, truststorePassword: tls.wrongKeystorePassword });
    await expect(signer.signMessage('x')).rejects.toThrow(
      /its TLS server certificate could not be verified \(\w+\); check the TLS truststore/,
    );
  });
});

describe('RemoteSigner answers', () => {
  it('error: a signature made by a different key is refused', async () => {
    const rogue = await startFakeWeb3Signer({ keys: new Map([[identifier, otherKey]]) });
    try {
      const signer = createRemoteSigner({ endpoint: rogue.url, publicKey: identifier }, provider);
      signers.push(signer);
      const tx = {
        type: 2,
        chainId: CHAIN_ID,
        nonce: 0,
        to: Wallet.createRandom().address,
        gasLimit: 21_000n,
        maxFeePerGas: 10n ** 9n,
        maxPriorityFeePerGas: 1n,
      };
      const err = await signer.signTransaction(tx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SignatureMismatchError);
      expect((err as Error).message).toBe(
        `remote signer ${rogue.url} returned a signature from ${new Wallet(otherKey.privateKey).address}, not from the configured key's address ${signer.address}; refusing to use it`,
      );
    } finally {
      await rogue.close();
    }
  });

  it('behavior: a high-s answer is normalised to the canonical signature', async () => {
    const mirrored = await startFakeWeb3Signer({ keys: new Map([[identifier, key]]), highS: true });
    try {
      const signer = createRemoteSigner({ endpoint: mirrored.url, publicKey: identifier }, provider);
      signers.push(signer);
      const signature = await signer.signMessage('mirrored');
      expect(signature).toBe(new Wallet(key.privateKey).signMessageSync('mirrored'));
    } finally {
      await mirrored.close();
    }
  });

  it('error: an unknown key (HTTP 404) is reported with the key, and URL credentials stay out of errors', async () => {
    const plain = await startFakeWeb3Signer({ keys: new Map(), prefix: '/signer' });
    try {
      const url = new URL(plain.url);
      const signer = createRemoteSigner(
        { endpoint: `http://relayer:s3cret-token@${url.host}/signer`, publicKey: identifier },
        provider,
      );
      signers.push(signer);
      const err = await signer.signMessage('x').catch((e: unknown) => e);
      expect((err as Error).message).toBe(
        `remote signer http://${url.host}/signer does not hold the key ${identifier} (HTTP 404)`,
      );
      expect(`${(err as Error).stack}`).not.toContain('s3cret');
    } finally {
      await plain.close();
    }
  });

  it('behavior: the path prefix is kept and URL credentials are sent as basic auth', async () => {
    const prefixed = await startFakeWeb3Signer({ keys: new Map([[identifier, key]]), prefix: '/signer' });
    try {
      const url = new URL(prefixed.url);
      const signer = createRemoteSigner(
        { endpoint: `http://relayer:s3cret-token@${url.host}/signer/`, publicKey: identifier },
        provider,
      );
      signers.push(signer);
      expect(verifyMessage('hi', await signer.signMessage('hi'))).toBe(signer.address);
      expect(prefixed.requests[0]!.path).toBe(`/signer/api/v1/eth1/sign/${identifier}`);
      expect(prefixed.requests[0]!.authorization).toBe(
        `Basic ${Buffer.from('relayer:s3cret-token').toString('base64')}`,
      );
    } finally {
      await prefixed.close();
    }
  });
});

describe('RemoteSigner timeouts', () => {
  it('error: a signer that never answers gives a retryable timeout naming the endpoint', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const signer = createRemoteSigner({ endpoint, publicKey: identifier, timeoutMs: 300 }, provider);
      signers.push(signer);
      const err = await signer.signMessage('x').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RetryableError);
      expect((err as Error).message).toBe(`remote signer ${endpoint} did not answer within 300 ms`);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('RemoteSigner public key forms', () => {
  it('args: 64-byte, 04-prefixed 65-byte and compressed keys give the same address and identifier', () => {
    const forms = [identifier, key.publicKey, key.compressedPublicKey, identifier.slice(2).toUpperCase()];
    const built = forms.map((publicKey) => createRemoteSigner({ endpoint: 'http://127.0.0.1:1', publicKey }, null));
    signers.push(...built);
    for (const s of built) {
      expect(s.address).toBe(new Wallet(key.privateKey).address);
      expect(s.backend.identifier).toBe(identifier);
    }
  });

  it('error: a public key that is not on the curve is refused', () => {
    expect(() =>
      createRemoteSigner({ endpoint: 'http://127.0.0.1:1', publicKey: `0x${'11'.repeat(64)}` }, null),
    ).toThrow(RemoteSignerError);
  });
});
