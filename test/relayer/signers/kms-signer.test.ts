import { SigningKey, Transaction, Wallet, toBeHex, verifyMessage, verifyTypedData, type JsonRpcProvider } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProvider } from '../../../src/common/chain/provider.js';
import { startAnvil, type Anvil } from '../../../src/devnet/anvil.js';
import {
  createKmsSigner,
  KmsSignerError,
  type KmsSigner,
  type KmsSignerOptions,
} from '../../../src/relayer/signers/backends.js';
import { SECP256K1_N } from '../../../src/relayer/signers/der.js';
import { startFakeKms, type FakeKms } from './kms-server.js';
import { mined } from '../../../src/common/chain/mined.js';

const CHAIN_ID = 31_337;
const KEY_ID = 'arn:aws:kms:eu-west-1:111122223333:key/0b5f3c2e-relayer';
const key = new SigningKey(Wallet.createRandom().privateKey);

let anvil: Anvil;
let provider: JsonRpcProvider;
let kms: FakeKms;
const signers: KmsSigner[] = [];

function options(keyId = KEY_ID): KmsSignerOptions {
  return {
    keyId,
    endpoint: kms.url,
    region: 'eu-west-1',
    credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'test-secret' },
  };
}

async function kmsSigner(): Promise<KmsSigner> {
  const signer = await createKmsSigner(options(), provider);
  signers.push(signer);
  return signer;
}

beforeAll(async () => {
  anvil = await startAnvil({ port: 0, chainId: CHAIN_ID });
  provider = createProvider(anvil.url, CHAIN_ID, { pollingInterval: 50 });
  kms = await startFakeKms(new Map([[KEY_ID, key]]));
});

afterAll(async () => {
  for (const s of signers) s.close();
  provider?.destroy();
  await kms?.close();
  await anvil?.stop();
});

describe('KmsSigner', () => {
  it('behavior: the address comes from the KMS public key', async () => {
    const signer = await kmsSigner();
    expect(signer.address).toBe(new Wallet(key.privateKey).address);
    expect(await signer.getAddress()).toBe(signer.address);
  });

  it('behavior: transactions signed through KMS (high-s answers included) are mined by anvil from the key’s address', async () => {
    const signer = await kmsSigner();
    await provider.send('anvil_setBalance', [signer.address, toBeHex(10n ** 18n)]);
    const recipient = Wallet.createRandom().address;
    const highBefore = kms.highS;
    for (let i = 0; i < 4; i++) {
      const receipt = await mined(signer.sendTransaction({ to: recipient, value: 1_000n + BigInt(i) }));
      expect(receipt?.status).toBe(1);
      expect(receipt?.from).toBe(signer.address);
      const raw = Transaction.from(await provider.send('eth_getRawTransactionByHash', [receipt!.hash]));
      // What went on chain is canonical even when KMS answered with the mirrored s.
      expect(BigInt(raw.signature!.s) <= SECP256K1_N / 2n).toBe(true);
    }
    expect(kms.highS - highBefore).toBeGreaterThanOrEqual(2);
    expect(await provider.getBalance(recipient)).toBe(4_006n);
  });

  it('behavior: signMessage and signTypedData verify to the address', async () => {
    const signer = await kmsSigner();
    const message = 'relayer health check';
    expect(verifyMessage(message, await signer.signMessage(message))).toBe(signer.address);
    expect(verifyMessage(message, await signer.signMessage(message))).toBe(signer.address);
    const domain = {
      name: 'l2stack',
      version: '1',
      chainId: CHAIN_ID,
      verifyingContract: Wallet.createRandom().address,
    };
    const types = {
      Claim: [
        { name: 'messageNumber', type: 'uint256' },
        { name: 'to', type: 'address' },
      ],
    };
    const value = { messageNumber: 7n, to: Wallet.createRandom().address };
    expect(verifyTypedData(domain, types, value, await signer.signTypedData(domain, types, value))).toBe(
      signer.address,
    );
  });

  it('args: an ethers Transaction object (how the relayer builds claims) is signed like a request', async () => {
    const signer = await kmsSigner();
    const unsigned = Transaction.from({
      type: 2,
      chainId: CHAIN_ID,
      nonce: 9,
      to: Wallet.createRandom().address,
      data: '0x1234',
      value: 5n,
      gasLimit: 60_000n,
      maxFeePerGas: 2n * 10n ** 9n,
      maxPriorityFeePerGas: 10n ** 9n,
    });
    const signed = Transaction.from(await signer.signTransaction(unsigned));
    expect(signed.from).toBe(signer.address);
    expect(signed.unsignedHash).toBe(unsigned.unsignedHash);
  });

  it('error: an unknown key id is a clear, non-retryable error naming the key', async () => {
    const missing = 'arn:aws:kms:eu-west-1:111122223333:key/does-not-exist';
    const err = await createKmsSigner(options(missing), provider).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KmsSignerError);
    expect((err as Error).message).toBe(
      `KMS key ${missing} at ${new URL(kms.url).host}: GetPublicKey failed (NotFoundException: Key '${missing}' does not exist)`,
    );
  });

  it('error: a transaction from another address is refused before KMS is asked', async () => {
    const signer = await kmsSigner();
    const before = kms.signs;
    const tx = {
      from: Wallet.createRandom().address,
      type: 2,
      chainId: CHAIN_ID,
      nonce: 0,
      to: signer.address,
      gasLimit: 21_000n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
    };
    await expect(signer.signTransaction(tx)).rejects.toThrow(/cannot be signed by KMS key/);
    expect(kms.signs).toBe(before);
  });
});
