import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenApiConfig } from '../../src/token-api/config.js';
import { addr, expectSpecResponse, seedTokens, startTestApi, type TestApi } from '../token-api/helpers.js';
import { startCanary } from './canary.js';
import { expectRefusedPastLimit, floodGet } from './flood.js';

/**
 * One address floods the token API's routes (the worst legal client: every 429 ignored, sixteen loops). With the
 * per-address limit at its defaults (TOKEN_API_RATE_LIMIT_PER_SECOND 100, burst 200) the flood gets 429
 * problem+json with Retry-After naming the limit, as the spec documents, and a client at another address (the
 * API behind one trusted proxy, so X-Forwarded-For names the client) keeps being served. Probes and the spec
 * are not limited.
 */
const { config } = loadTokenApiConfig({ TOKEN_API_TRUSTED_PROXY_HOPS: '1' }, { indexer: false });
let t: TestApi;

beforeAll(async () => {
  t = await startTestApi({ rateLimit: config.rateLimit });
  await seedTokens(
    t,
    Array.from({ length: 50 }, (_, i) => ({ address: addr(i + 1), currentPrice: 1 + i })),
  );
});
afterAll(async () => {
  await t?.close();
});

describe('adversarial: token API flood from one address', () => {
  it(
    'behavior: the flood gets 429 with Retry-After naming the limit, as the spec documents; another address stays served; probes are not limited',
    { timeout: 60_000 },
    async () => {
      expect(config.rateLimit).toEqual({ perSecond: 100, burst: 200, trustedProxyHops: 1 });
      const canary = startCanary(
        'token-api-other-address',
        { url: `${t.url}/tokens/${addr(7)}`, headers: { 'x-forwarded-for': '10.0.0.2' } },
        { intervalMs: 100 },
      );
      const flood = await floodGet(`${t.url}/tokens?limit=5&order=swaps`, { 'x-forwarded-for': '10.0.0.1' }, 16, 4_000);
      const report = await canary.stop();
      process.stdout.write(
        `token-api-flood: ${flood.counts.get(200) ?? 0} served and ${flood.counts.get(429) ?? 0} refused (429) in ${flood.seconds.toFixed(1)} s from one address; canary p50 ${report.p50Ms} ms, p99 ${report.p99Ms} ms\n`,
      );
      expectRefusedPastLimit(flood, {
        perSecond: 100,
        burst: 200,
        variables: 'TOKEN_API_RATE_LIMIT_PER_SECOND / TOKEN_API_RATE_LIMIT_BURST',
      });
      expect(report.failed).toBe(0);
      expect(report.sent).toBeGreaterThanOrEqual(5);

      // Another route past the limit (the bucket refills 100 a second, so a few requests may pass first): refused
      // in the shape the spec documents.
      let refusal: Response | undefined;
      for (let i = 0; i < 1_000 && refusal === undefined; i++) {
        const res = await fetch(`${t.url}/prices/${addr(3)}`, { headers: { 'x-forwarded-for': '10.0.0.1' } });
        if (res.status === 429) refusal = res;
        else await res.arrayBuffer();
      }
      expect(refusal?.status).toBe(429);
      await expectSpecResponse('getTokenPrices', refusal!);
      // Probes and the spec stay reachable from the flooding address.
      for (const path of ['/health/live', '/openapi.json']) {
        expect((await fetch(`${t.url}${path}`, { headers: { 'x-forwarded-for': '10.0.0.1' } })).status).toBe(200);
      }
    },
  );

  it('behavior: TOKEN_API_RATE_LIMIT_PER_SECOND=0 turns the limit off; a bad value is refused naming the variable', () => {
    expect(
      loadTokenApiConfig({ TOKEN_API_RATE_LIMIT_PER_SECOND: '0' }, { indexer: false }).config.rateLimit?.perSecond,
    ).toBe(0);
    expect(
      loadTokenApiConfig({ TOKEN_API_RATE_LIMIT_PER_SECOND: '5', TOKEN_API_RATE_LIMIT_BURST: '7' }, { indexer: false })
        .config.rateLimit,
    ).toEqual({ perSecond: 5, burst: 7, trustedProxyHops: 0 });
    expect(() => loadTokenApiConfig({ TOKEN_API_RATE_LIMIT_PER_SECOND: 'fast' }, { indexer: false })).toThrow(
      /TOKEN_API_RATE_LIMIT_PER_SECOND/,
    );
    expect(() => loadTokenApiConfig({ TOKEN_API_RATE_LIMIT_BURST: '0' }, { indexer: false })).toThrow(
      /TOKEN_API_RATE_LIMIT_BURST/,
    );
  });
});
