import type { RequestListener } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { listen, type RunningServer } from '../../src/common/http/server.js';
import { deferredApi, type DeferredApi } from '../../src/relayer/api/deferred.js';

/** A stand-in for the built API: answers every request with its method and path. */
const echoApp: RequestListener = (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ served: `${req.method} ${req.url}` }));
};

let server: RunningServer | undefined;
let api: DeferredApi | undefined;
afterEach(async () => {
  api?.cancel();
  await server?.close();
  server = undefined;
  api = undefined;
});

async function serve(options: Partial<Parameters<typeof deferredApi>[0]> & { build: () => Promise<RequestListener> }) {
  const failures: Error[] = [];
  api = deferredApi({ maxWaitMs: 400, idleBelow: -1, failed: (err) => failures.push(err), ...options });
  let arrived = 0;
  const listener = api.listener;
  server = await listen((req, res) => (arrived++, listener(req, res)), '127.0.0.1', 0, 'deferred api');
  return { url: server.url, failures, api, arrived: () => arrived };
}

describe('the relayer API built off the start path', () => {
  it('behavior: /health/live answers at once; other requests wait for the build and are then served by it', async () => {
    let builds = 0;
    let builtAt = 0;
    const { url } = await serve({ build: async () => ((builds++, (builtAt = Date.now())), echoApp) });
    const live = await fetch(`${url}/health/live`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    expect(builds).toBe(0); // never idle here (idleBelow -1): the build waits for maxWaitMs
    const asked = Date.now();
    const [a, b] = await Promise.all([
      fetch(`${url}/messages?limit=1`),
      fetch(`${url}/messages/0xab`, { method: 'POST', body: 'x' }),
    ]);
    expect(await a.json()).toEqual({ served: 'GET /messages?limit=1' });
    expect(await b.json()).toEqual({ served: 'POST /messages/0xab' });
    expect(builds).toBe(1);
    expect(builtAt).toBeGreaterThanOrEqual(asked);
    // Once built, everything is the API's, /health/live included.
    expect(await (await fetch(`${url}/health/live`)).json()).toEqual({ served: 'GET /health/live' });
  });

  it('behavior: an idle process builds the API within a sampling window or two, without waiting for maxWaitMs', async () => {
    const { api: deferred } = await serve({
      build: async () => echoApp,
      idleBelow: 0.5,
      windowMs: 50,
      maxWaitMs: 60_000,
    });
    const started = Date.now();
    await deferred.built;
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('error: a build that fails is reported once and every request gets a 500 problem naming it', async () => {
    const {
      url,
      failures,
      api: deferred,
    } = await serve({ build: async () => Promise.reject(new Error('spec unreadable')) });
    const waiting = fetch(`${url}/messages`);
    await deferred.built;
    for (const res of [await waiting, await fetch(`${url}/messages/0x01`)]) {
      expect(res.status).toBe(500);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(await res.json()).toMatchObject({ status: 500, detail: 'the relayer API could not be built' });
    }
    expect(failures.map((e) => e.message)).toEqual(['spec unreadable']);
  });

  it('behavior: stopping before the build answers waiting requests 503 and never builds', async () => {
    let builds = 0;
    const { url, api: deferred, arrived } = await serve({ build: async () => (builds++, echoApp), maxWaitMs: 60_000 });
    const waiting = fetch(`${url}/messages`);
    await expect.poll(arrived, { timeout: 10_000, interval: 10 }).toBe(1); // the request is in, waiting
    deferred.cancel();
    const res = await waiting;
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 503, detail: 'the relayer is stopping' });
    await deferred.built;
    expect(builds).toBe(0);
  });
});
