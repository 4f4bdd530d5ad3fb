import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { Writable } from 'node:stream';
import type { RequestHandler } from 'express';
import { createHttpApp } from '../../src/common/http/app.js';
import { listen, PortInUseError, type RunningServer } from '../../src/common/http/server.js';
import { createLogger } from '../../src/common/log.js';
import { notFound } from '../../src/common/errors.js';
import type { OpenApiDocument } from '../../src/common/http/spec.js';

const spec = parse(readFileSync(new URL('../fixtures/mini.openapi.yaml', import.meta.url), 'utf8')) as OpenApiDocument;
const logLines: string[] = [];
const logger = createLogger({
  level: 'error',
  destination: new Writable({ write: (chunk, _enc, cb) => (logLines.push(String(chunk)), cb()) }),
});

let server: RunningServer;
beforeAll(async () => {
  const app = createHttpApp({
    spec,
    logger,
    validateResponses: true,
    handlers: {
      getItem: ((req, res) => {
        const id = String(req.params.id);
        if (id.endsWith('0000')) throw notFound(`no item ${id}`);
        if (id.endsWith('dead')) throw new Error('database password=hunter2 exploded');
        if (id.endsWith('beef')) return void res.json({ id, limit: req.query.limit, extra: true }); // breaks the spec
        res.json({ id, limit: req.query.limit });
      }) satisfies RequestHandler,
    },
  });
  server = await listen(app, '127.0.0.1', 0);
});
afterAll(() => server?.close());

interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
}
const problem = async (res: Response) => (await res.json()) as ProblemBody;
const id = (suffix: string) => `0x${'1'.repeat(40 - suffix.length)}${suffix}`;

describe('http app', () => {
  it('behavior: a valid request reaches its handler with defaults applied', async () => {
    const res = await fetch(`${server.url}/items/${id('aa')}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: id('aa'), limit: 50 });
  });

  it('error: a validator failure is problem+json naming the parameter', async () => {
    const res = await fetch(`${server.url}/items/${id('aa')}?limit=500`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = await problem(res);
    expect(body).toMatchObject({ type: 'about:blank', title: 'Bad Request', status: 400 });
    expect(body.detail).toContain('query/limit');
    expect(body.detail).toContain('<= 100');
  });

  it('error: a bad path parameter is a 400, an unknown query parameter too', async () => {
    const bad = await fetch(`${server.url}/items/0x12`);
    expect(bad.status).toBe(400);
    expect((await problem(bad)).detail).toContain('path/id');
    const unknown = await fetch(`${server.url}/items/${id('aa')}?nope=1`);
    expect(unknown.status).toBe(400);
    expect((await problem(unknown)).detail).toContain('nope');
  });

  it('error: HttpError from a handler keeps its status; unknown routes are problem+json 404', async () => {
    const res = await fetch(`${server.url}/items/${id('0000')}`);
    expect(res.status).toBe(404);
    expect((await problem(res)).detail).toBe(`no item ${id('0000')}`);
    const route = await fetch(`${server.url}/nothing/here`);
    expect(route.status).toBe(404);
    expect(route.headers.get('content-type')).toMatch(/problem\+json/);
  });

  it('error: an unexpected failure is a generic 500 with no stack or secret, logged', async () => {
    const res = await fetch(`${server.url}/items/${id('dead')}`);
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).not.toContain('hunter2');
    expect(text).not.toMatch(/at .*\.ts:\d+/);
    expect((JSON.parse(text) as ProblemBody).title).toBe('Internal Server Error');
    expect(logLines.join('')).toContain('unhandled error');
  });

  it('error: a response that breaks the spec is caught in tests', async () => {
    const res = await fetch(`${server.url}/items/${id('beef')}`);
    expect(res.status).toBe(500);
  });

  it('error: a missing handler fails at start-up', () => {
    expect(() => createHttpApp({ spec, logger, handlers: {} as never })).toThrow('no handler for operation getItem');
  });

  it('error: a taken port is named', async () => {
    await expect(listen(() => undefined, '127.0.0.1', server.port, 'token API')).rejects.toThrow(
      new PortInUseError(`token API: port ${server.port} on 127.0.0.1 is already in use`),
    );
  });
});
