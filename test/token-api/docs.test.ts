import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from './helpers.js';

/** /docs rendered by a real headless Chromium: all eight operations appear, and nothing loads from elsewhere. */
const CHROMIUM = '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM);
if (missing)
  console.warn(`docs.test.ts skipped: ${CHROMIUM} not installed (.ci/run installs the Debian chromium package)`);

describe.skipIf(missing)('token API: /docs in a browser', () => {
  let t: TestApi;
  let browser: Browser;
  beforeAll(async () => {
    t = await startTestApi();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('behavior: renders the eight operations from /openapi.json with local assets only', async () => {
    const page = await browser.newPage();
    const foreign: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(t.url) && !r.url().startsWith('data:')) foreign.push(r.url());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${t.url}/docs`);
    await page.waitForSelector('.opblock-summary-path', { timeout: 30_000 });
    const paths = await page.$$eval('.opblock-summary', (els) =>
      els.map(
        (el) =>
          `${el.querySelector('.opblock-summary-method')?.textContent} ${el.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`,
      ),
    );
    expect(paths.sort()).toEqual([
      'GET /prices',
      'GET /prices/{contractAddress}',
      'GET /prices/{contractAddress}/candles',
      'GET /tokens',
      'GET /tokens/{contractAddress}',
      'GET /tokens/{contractAddress}/price-sources',
      'GET /tokens/{contractAddress}/supply/circulating',
      'GET /tokens/{contractAddress}/supply/total',
    ]);
    expect(await page.textContent('.info .title')).toContain('l2stack token data API');
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
