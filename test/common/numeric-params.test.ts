import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/log.js';
import { numericProblem, strictNumericParams } from '../../src/common/http/numeric-params.js';
import { problemHandler } from '../../src/common/http/problem.js';
import { listen, type RunningServer } from '../../src/common/http/server.js';
import type { OpenApiDocument } from '../../src/common/http/spec.js';

/**
 * The strict number step on shapes our two specs do not have yet (so the spec-driven sweep in
 * test/adversarial/http-numbers.test.ts would not reach them): integer path parameters, path-level
 * parameters, `number` query parameters, a literal path next to a template, $ref'd schemas.
 */
const doc = {
  openapi: '3.0.3',
  info: { title: 't', version: '1' },
  paths: {
    '/blocks/{number}': {
      parameters: [{ name: 'number', in: 'path', required: true, schema: { $ref: '#/components/schemas/Height' } }],
      get: { operationId: 'getBlock', parameters: [{ name: 'min', in: 'query', schema: { type: 'number' } }] },
    },
    '/blocks/latest': { get: { operationId: 'latest' } },
  },
  components: { schemas: { Height: { type: 'integer', minimum: 0 } } },
} as unknown as OpenApiDocument;

let server: RunningServer;
beforeAll(async () => {
  const app = express();
  app.set('query parser', 'simple');
  app.use(strictNumericParams(doc));
  app.get('/{*rest}', (_req, res) => void res.json({ ok: true }));
  app.use(problemHandler(createLogger({ level: 'silent' })));
  server = await listen(app, '127.0.0.1', 0);
});
afterAll(() => server?.close());

const get = async (path: string) => {
  const res = await fetch(`${server.url}${path}`);
  return { status: res.status, body: (await res.json()) as { detail?: string } };
};

describe('strict numeric parameters', () => {
  it('args: plain decimal forms pass', async () => {
    expect((await get('/blocks/12?min=1.5')).status).toBe(200);
    expect((await get('/blocks/007?min=-3')).status).toBe(200);
    expect((await get('/blocks/latest')).status).toBe(200); // the literal path is not the {number} template
  });

  it('error: an integer path parameter refuses exponent, hex, fraction and non-finite forms', async () => {
    for (const v of ['1e309', '-1e309', '1e2', '0x10', '1.5', 'NaN', 'Infinity', '%2B1', '99999999999999999999']) {
      const { status, body } = await get(`/blocks/${v}`);
      expect(status, v).toBe(400);
      expect(body.detail).toMatch(/^path\/number must be an integer written in decimal digits/);
    }
  });

  it('error: a number query parameter refuses exponent, hex and non-finite forms, every repetition checked', async () => {
    for (const v of ['1e309', '1e2', '0x10', 'NaN', 'Infinity', '1.', '.5']) {
      const { status, body } = await get(`/blocks/1?min=${v}`);
      expect(status, v).toBe(400);
      expect(body.detail).toMatch(/^query\/min must be a decimal number/);
    }
    expect((await get('/blocks/1?min=1&min=1e309')).status).toBe(400);
  });

  it('behavior: the message names the expected form and the value', () => {
    expect(numericProblem('integer', '1e309')).toMatchInlineSnapshot(
      `"must be an integer written in decimal digits (e.g. 10), not an exponent, hex, fraction or non-finite value; got "1e309""`,
    );
    expect(numericProblem('integer', '12')).toBeUndefined();
  });
});
