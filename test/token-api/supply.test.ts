import { parseEther } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NativeToken__factory, type NativeToken } from '../../generated/contracts/types/index.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { formatDecimal } from '../../src/token-api/decimal.js';
import { addr, expectSpecResponse, startTestApi, type TestApi } from './helpers.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { ResendingWallet } from '../helpers/chain.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * The supply endpoints against a real chain: totalSupply() of the native token and the balances of the
 * excluded wallets, exact to the last of 18 decimals; burns and transfers show after a refresh.
 */
let anvil: Anvil;
let t: TestApi;
let token: NativeToken;
let native: string;
const TREASURY = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
const VESTING = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc';
// 1e9 tokens plus one wei: any float on the way would lose the last digit.
const INITIAL = parseEther('1000000000') + 1n;

beforeAll(async () => {
  anvil = await startAnvil({ port: 0, chainId: 31_337 });
  const provider = createProvider(anvil.url, 31_337);
  const deployer = new ResendingWallet(devAccounts(1)[0]!.privateKey, provider);
  token = await new NativeToken__factory(deployer).deploy('Native', 'NAT', await deployer.getAddress(), INITIAL);
  await token.waitForDeployment();
  native = (await token.getAddress()).toLowerCase();
  await mined(token.transfer(TREASURY, parseEther('250000000')));
  await mined(token.transfer(VESTING, parseEther('7684492.249999999999999999')));
  t = await startTestApi({
    nativeToken: native,
    rpcUrl: anvil.url,
    excludedWallets: [
      { address: TREASURY, label: 'Treasury', status: 'active' },
      { address: VESTING, label: 'Team vesting', status: 'inactive' },
    ],
  });
  await t.api.supply!.refresh();
});
afterAll(async () => {
  await t?.close();
  await anvil?.stop();
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${t.url}${path}`, { headers });

describe('token API: supply', () => {
  it('behavior: raw total and circulating supply are exact text/plain decimals', async () => {
    const total = await get(`/tokens/${native}/supply/total`);
    expect(total.headers.get('content-type')).toContain('text/plain');
    expect(await expectSpecResponse('getTotalSupply', total)).toBe('1000000000.000000000000000001');
    const circulating = await get(`/tokens/${native.toUpperCase().replace('0X', '0x')}/supply/circulating?format=raw`);
    expect(await expectSpecResponse('getCirculatingSupply', circulating)).toBe('742315507.750000000000000002');
  });

  it('behavior: format=json returns the documented objects with the excluded wallets', async () => {
    const { data: total } = await t.client.GET('/tokens/{contractAddress}/supply/total', {
      params: { path: { contractAddress: native }, query: { format: 'json' } },
    });
    expect(total).toEqual({ totalSupply: '1000000000.000000000000000001', lastUpdated: expect.any(String) });
    const res = await get(`/tokens/${native}/supply/circulating?format=json`);
    const body = await expectSpecResponse('getCirculatingSupply', res);
    expect(body).toEqual({
      circulatingSupply: '742315507.750000000000000002',
      totalSupply: '1000000000.000000000000000001',
      lastUpdated: (total as { lastUpdated: string }).lastUpdated,
      excludedWallets: [
        { address: TREASURY, label: 'Treasury', status: 'active', balance: '250000000' },
        { address: VESTING, label: 'Team vesting', status: 'inactive', balance: '7684492.249999999999999999' },
      ],
    });
    await expectSpecResponse('getTotalSupply', await get(`/tokens/${native}/supply/total?format=json`));
  });

  it('behavior: raw and json have different ETags; a matching If-None-Match is 304', async () => {
    const raw = await get(`/tokens/${native}/supply/total`);
    const json = await get(`/tokens/${native}/supply/total?format=json`);
    expect(raw.headers.get('etag')).not.toBe(json.headers.get('etag'));
    expect(raw.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    const again = await get(`/tokens/${native}/supply/total`, { 'if-none-match': raw.headers.get('etag')! });
    expect(again.status).toBe(304);
    await expectSpecResponse('getTotalSupply', again);
  });

  it('behavior: a burn lowers the total supply and a transfer to an excluded wallet the circulating supply', async () => {
    await mined(token.burn(parseEther('0.5')));
    await mined(token.transfer(VESTING, 1n));
    await t.api.supply!.refresh();
    expect(await (await get(`/tokens/${native}/supply/total`)).text()).toBe(
      formatDecimal(INITIAL - parseEther('0.5'), 18),
    );
    expect(await (await get(`/tokens/${native}/supply/total`)).text()).toBe('999999999.500000000000000001');
    expect(await (await get(`/tokens/${native}/supply/circulating`)).text()).toBe('742315507.250000000000000001');
  });

  it('error: supply of any other address is a 404 problem; a malformed one 400', async () => {
    for (const op of ['total', 'circulating']) {
      const other = await get(`/tokens/${addr(5)}/supply/${op}`);
      expect(other.status).toBe(404);
      const body = (await expectSpecResponse(op === 'total' ? 'getTotalSupply' : 'getCirculatingSupply', other)) as {
        detail: string;
      };
      expect(body.detail).toContain(native);
      expect((await get(`/tokens/0x12/supply/${op}`)).status).toBe(400);
      expect((await get(`/tokens/${native}/supply/${op}?format=xml`)).status).toBe(400);
    }
  });

  it('error: before the first computation both endpoints are 503 with Retry-After', async () => {
    // An RPC nobody listens on: the job keeps failing, so the cache stays empty.
    const down = await startTestApi(
      { nativeToken: native, rpcUrl: 'http://127.0.0.1:9', supplyRefreshMs: 60_000 },
      t.db,
    );
    try {
      for (const [op, path] of [
        ['getTotalSupply', 'total'],
        ['getCirculatingSupply', 'circulating?format=json'],
      ] as const) {
        const res = await fetch(`${down.url}/tokens/${native}/supply/${path}`);
        expect(res.status).toBe(503);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        await expectSpecResponse(op, res);
      }
      expect(await (await fetch(`${down.url}/health/ready`)).json()).toMatchObject({
        checks: expect.arrayContaining([{ name: 'supply', ok: true, detail: 'pending' }]),
      });
    } finally {
      await down.close();
    }
  });
});
