import { notFound } from '../../common/errors.js';
import type { ListQuery } from '../repository.js';
import { tokenJson } from '../read-model/record.js';
import { windowHours } from '../read-model/series.js';
import type { HandlerContext } from './context.js';
import type { Representation } from './representation.js';

/**
 * The four data operations answered from the read model, shared by the express handlers (after spec
 * validation) and the fast path (for requests it has fully validated itself). Each answer is built from
 * pre-serialized token and series JSON, so the work is proportional to what the response contains.
 */

/** 32-bit FNV-1a of a string, base 36: a short, stable digest of the request's normalized parameters. */
function digest(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(36);
}

/**
 * The ETag is the read model's version (the change number of the last indexer write it holds), the
 * price window's position where the answer depends on the clock, and a digest of the normalized request:
 * replicas at the same version give the same tag, and any write changes it, with no body hashing.
 */
function jsonAnswer(ctx: HandlerContext, text: string, key: string, windowPart = ''): Representation {
  const body = Buffer.from(text);
  const rep: Representation = {
    body,
    contentType: 'application/json; charset=utf-8',
    etag: `"v${ctx.model.version}${windowPart}-${digest(key)}"`,
    maxAgeSeconds: ctx.cacheMaxAgeSeconds,
  };
  if (ctx.validateResponses) rep.value = JSON.parse(text);
  return rep;
}

/** The window's first hour, and whether it holds 25 hours (now exactly on the hour). */
const windowPart = (now: number) => {
  const { first, last } = windowHours(now);
  return `h${first / 3_600_000}${last - first === 86_400_000 ? 'x' : ''}`;
};

export function listTokensAnswer(ctx: HandlerContext, q: ListQuery): Representation {
  const { rows, total } = ctx.model.page(q);
  const base = ctx.logoBase();
  let data = '';
  for (const r of rows) data += (data === '' ? '' : ',') + tokenJson(r, base);
  const meta = JSON.stringify({ page: q.page, limit: q.limit, totalItemsCount: total, pagesCount: Math.ceil(total / q.limit) });
  const key = `l|${q.page}|${q.limit}|${q.isSecure}|${q.order}|${q.sort}|${q.addresses?.join(',') ?? ''}`;
  return jsonAnswer(ctx, `{"data":[${data}],"meta":${meta}}`, key);
}

export function tokenAnswer(ctx: HandlerContext, address: string): Representation {
  const rec = ctx.model.token(address);
  if (!rec) throw notFound(`No token with contract address ${address}`);
  return jsonAnswer(ctx, tokenJson(rec, ctx.logoBase()), `t|${address}`);
}

export function tokenPricesAnswer(ctx: HandlerContext, address: string): Representation {
  if (!ctx.model.token(address)) throw notFound(`No token with contract address ${address}`);
  const now = ctx.now();
  return jsonAnswer(ctx, ctx.model.seriesJson(address, now), `p|${address}`, windowPart(now));
}

/** `addresses`: distinct, lower case, in request order (parseAddresses). */
export function pricesAnswer(ctx: HandlerContext, addresses: string[]): Representation {
  const now = ctx.now();
  let text = '';
  for (const a of addresses) text += `${text === '' ? '' : ','}"${a}":${ctx.model.seriesJson(a, now)}`;
  return jsonAnswer(ctx, `{${text}}`, `m|${addresses.join(',')}`, windowPart(now));
}
