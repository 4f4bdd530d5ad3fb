import { afterEach, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import type { RequestListener } from 'node:http';
import express from 'express';
import { Counter, Registry } from 'prom-client';
import { deferredApp, type DeferredApp } from '../../src/common/http/deferred-app.js';
import { listen, type RunningServer } from '../../src/common/http/server.js';
import { createLogger } from '../../src/common/log.js';

/**
 * An API whose spec and validators are built once the process has time (src/common/http/deferred-app.ts; the
 * relayer's API): probes and scrapes are answered meanwhile, every other request waits for the full app.
 */
const logLines: string[] = [];
const logger = createLogger({ level: 'error', destination: new Writable({ write: (chunk, _enc, cb) => (logLines.push(String(chunk)), cb()) }) });

let server: RunningServer | undefined;
let api: DeferredApp | undefined;
afterEach(async () => {
  api?.stop();
  await server?.close();
});

/** A full app that answers every request with its name, built when `release` is called. */
function gatedBuild(fail = false) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let calls = 0;
  const full = express();
  full.use((req, res) => res.json({ servedBy: 'full', path: req.path }));
  const build = async (): Promise<RequestListener> => {
    calls++;
    await gate;
    if (fail && calls === 1) throw new Error('spec broken');
    return full;
  };
  return { build, release, calls: () => calls };
}

async function start(build: () => Promise<RequestListener>): Promise<string> {
  const registry = new Registry();
  new Counter({ name: 'test_things_total', help: 'things', registers: [registry] });
  api = deferredApp({ build, operator: { metrics: registry, readiness: async () => [{ name: 'database', ok: true }] }, logger });
  server = await listen(api.handler, '127.0.0.1', 0);
  return server.url;
}

describe('deferred app', () => {
  it('behavior: probes and metrics are answered while the full app is still being built', async () => {
    const b = gatedBuild();
    const url = await start(b.build);
    const live = await fetch(`${url}/health/live`);
    expect([live.status, await live.json()]).toEqual([200, { status: 'ok' }]);
    const ready = await fetch(`${url}/health/ready`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ok', checks: [{ name: 'database', ok: true }] }]);
    expect(await (await fetch(`${url}/metrics`)).text()).toContain('test_things_total');
    b.release();
  });

  it('behavior: any other request waits for the full app and is served by it, and so is every request after it', async () => {
    const b = gatedBuild();
    const url = await start(b.build);
    const pending = fetch(`${url}/messages?limit=1`);
    setTimeout(b.release, 50);
    expect(await (await pending).json()).toEqual({ servedBy: 'full', path: '/messages' });
    // Once built, the probes go to the full app too (which validates them against the spec).
    expect(await (await fetch(`${url}/health/live`)).json()).toEqual({ servedBy: 'full', path: '/health/live' });
    expect(b.calls()).toBe(1);
  });

  it('behavior: a probe with a query string is not one the quick routes answer: it goes to the full app', async () => {
    const b = gatedBuild();
    b.release();
    const url = await start(b.build);
    expect(await (await fetch(`${url}/metrics?x=1`)).json()).toEqual({ servedBy: 'full', path: '/metrics' });
  });

  it('behavior: the full app is built without any request once the process is idle', async () => {
    const b = gatedBuild();
    b.release();
    await start(b.build);
    const deadline = Date.now() + 10_000;
    while (b.calls() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(b.calls()).toBe(1);
  });

  it('error: a failed build answers problem+json 500, and the next request builds again', async () => {
    const b = gatedBuild(true);
    const url = await start(b.build);
    const pending = fetch(`${url}/messages`);
    setTimeout(b.release, 50);
    const first = await pending;
    expect(first.status).toBe(500);
    expect(first.headers.get('content-type')).toContain('application/problem+json');
    expect(await first.json()).toMatchObject({ status: 500, detail: 'the API could not be built; the next request tries again' });
    expect(logLines.join('')).toContain('spec broken');
    expect(await (await fetch(`${url}/messages`)).json()).toEqual({ servedBy: 'full', path: '/messages' });
    expect(b.calls()).toBe(2);
  });
});
