import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { RunningServer } from '../../src/common/http/server.js';
import { openTestDb } from '../helpers/db.js';
import { startTestApi, type TestApi } from '../token-api/helpers.js';
import { startRelayerApi } from './servers.js';

/**
 * Issue 18 item 3: number formats must not bypass validation. `limit=1e309` used to pass as
 * `"limit":null` and return every row. The sweep reads both OpenAPI documents, so a numeric parameter
 * added later is covered without touching this file.
 */

type Node = Record<string, unknown>;
const HOSTILE = ['1e309', '-1e309', '1e2', '0x10', '1.5', 'NaN', 'Infinity'];

function resolve(doc: Node, node: unknown): Node {
  let cur = node as Node;
  while (cur && typeof cur.$ref === 'string') {
    let next: unknown = doc;
    for (const part of cur.$ref.replace(/^#\//, '').split('/')) next = (next as Node)[part];
    cur = next as Node;
  }
  return cur ?? {};
}

interface Case {
  spec: string;
  method: string;
  path: string;
  param: { name: string; in: 'query' | 'path'; type: 'integer' | 'number' };
  /** A valid value for every parameter the operation needs (examples and defaults of the spec). */
  valid: Record<string, string>;
  pathParams: string[];
}

function cases(file: string): Case[] {
  const doc = parse(readFileSync(new URL(`../../specs/${file}`, import.meta.url), 'utf8')) as Node;
  const out: Case[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Node>)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method] as Node | undefined;
      if (!op) continue;
      const params = [...((item.parameters as unknown[]) ?? []), ...((op.parameters as unknown[]) ?? [])].map((p) =>
        resolve(doc, p),
      );
      const valid: Record<string, string> = {};
      const numeric: Case['param'][] = [];
      for (const p of params) {
        if (p.in !== 'query' && p.in !== 'path') continue;
        const schema = resolve(doc, p.schema);
        const type = schema.type;
        if (type === 'integer' || type === 'number') numeric.push({ name: String(p.name), in: p.in, type });
        const example =
          p.example ??
          schema.example ??
          schema.default ??
          schema.minimum ??
          (schema.enum as unknown[] | undefined)?.[0];
        if (p.required || type === 'integer' || type === 'number') valid[String(p.name)] = String(example);
      }
      const pathParams = params.filter((p) => p.in === 'path').map((p) => String(p.name));
      for (const param of numeric)
        out.push({ spec: file, method: method.toUpperCase(), path, param, valid, pathParams });
    }
  }
  return out;
}

function url(base: string, c: Case, values: Record<string, string>): string {
  let path = c.path;
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (c.pathParams.includes(name)) path = path.replace(`{${name}}`, encodeURIComponent(value));
    else query.set(name, value);
  }
  const qs = query.toString();
  return `${base}${path}${qs ? `?${qs}` : ''}`;
}

const tokenCases = cases('token-api.openapi.yaml');
const relayerCases = cases('relayer-api.openapi.yaml');

let db: Awaited<ReturnType<typeof openTestDb>>;
let token: TestApi;
let relayer: RunningServer;

beforeAll(async () => {
  db = await openTestDb();
  token = await startTestApi({}, db);
  relayer = await startRelayerApi({ db });
});

afterAll(async () => {
  await relayer?.close();
  await token?.close();
  await db?.close();
});

describe('numeric parameters of both OpenAPI documents', () => {
  it('args: the sweep finds numeric parameters in each document (page and limit at least)', () => {
    for (const list of [tokenCases, relayerCases]) {
      expect(list.map((c) => c.param.name)).toEqual(expect.arrayContaining(['page', 'limit']));
    }
  });

  for (const c of [...tokenCases, ...relayerCases]) {
    const base = () => (c.spec.startsWith('token') ? token.url : relayer.url);
    // A fraction is a well-formed `number`; only integers must refuse it.
    const hostile = c.param.type === 'integer' ? HOSTILE : HOSTILE.filter((v) => v !== '1.5');

    it(`error: ${c.spec} ${c.method} ${c.path} ${c.param.in} ${c.param.name} refuses ${hostile.join(' ')}`, async () => {
      for (const value of hostile) {
        const res = await fetch(url(base(), c, { ...c.valid, [c.param.name]: value }), { method: c.method });
        const text = await res.text();
        expect(res.status, `${c.param.name}=${value}: ${text}`).toBe(400);
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        const problem = JSON.parse(text) as { status: number; detail: string; errors?: { path: string }[] };
        expect(problem.status).toBe(400);
        expect(problem.detail).toContain(`${c.param.in}/${c.param.name}`);
        expect(problem.detail).toContain(
          c.param.type === 'integer' ? 'an integer written in decimal digits' : 'a decimal number',
        );
        expect(problem.errors?.map((e) => e.path)).toContain(`${c.param.in}/${c.param.name}`);
      }
    });

    it(`behavior: ${c.spec} ${c.method} ${c.path} ${c.param.name}=${c.valid[c.param.name]} is still 200`, async () => {
      const res = await fetch(url(base(), c, c.valid), { method: c.method });
      expect(res.status, await res.clone().text()).toBe(200);
      const body = (await res.json()) as { meta?: Record<string, unknown> };
      if (body.meta && c.param.name in body.meta) expect(body.meta[c.param.name]).toBe(Number(c.valid[c.param.name]));
    });
  }
});
