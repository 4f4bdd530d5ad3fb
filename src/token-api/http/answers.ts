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
function jsonAnswer(ctx: HandlerContext, body: Buffer, key: string, windowPart = ''): Representation {
  const rep: Representation = {
    body,
    contentType: 'application/json; charset=utf-8',
    etag: `"v${ctx.model.version}${windowPart}-${digest(key)}"`,
    maxAgeSeconds: ctx.cacheMaxAgeSeconds,
  };
  if (ctx.validateResponses) rep.value = JSON.parse(body.toString());
  return rep;
}

/** The window's first hour, and whether it holds 25 hours (now exactly on the hour). */
const windowPart = (now: number) => {
  const { first, last } = windowHours(now);
  return `h${first / 3_600_000}${last - first === 86_400_000 ? 'x' : ''}`;
};

const COMMA = Buffer.from(',');
const LIST_OPEN = Buffer.from('{"data":[');
const PRICES_OPEN = Buffer.from('{');
const PRICES_CLOSE = Buffer.from('}');

/** Collects byte pieces and their total length for one Buffer.concat. */
class Pieces {
  private readonly parts: Buffer[] = [];
  private length = 0;
  add(b: Buffer): void {
    this.parts.push(b);
    this.length += b.length;
  }
  bytes(): Buffer {
    return Buffer.concat(this.parts, this.length);
  }
}

const noToken = (address: string) => notFound(`No token with contract address ${address}`);

export function listTokensAnswer(ctx: HandlerContext, q: ListQuery): Representation {
  const { rows, total } = ctx.model.page(q);
  const base = ctx.logoBase();
  const out = new Pieces();
  out.add(LIST_OPEN);
  rows.forEach((r, i) => {
    if (i > 0) out.add(COMMA);
    out.add(tokenJson(r, base));
  });
  out.add(
    Buffer.from(
      `],"meta":${JSON.stringify({ page: q.page, limit: q.limit, totalItemsCount: total, pagesCount: Math.ceil(total / q.limit) })}}`,
    ),
  );
  const key = `l|${q.page}|${q.limit}|${q.isSecure}|${q.order}|${q.sort}|${q.addresses?.join(',') ?? ''}`;
  return jsonAnswer(ctx, out.bytes(), key);
}

export function tokenAnswer(ctx: HandlerContext, address: string): Representation {
  const rec = ctx.model.token(address);
  if (!rec) throw noToken(address);
  return jsonAnswer(ctx, tokenJson(rec, ctx.logoBase()), `t|${address}`);
}

export function tokenPricesAnswer(ctx: HandlerContext, address: string): Representation {
  if (!ctx.model.token(address)) throw noToken(address);
  const now = ctx.now();
  return jsonAnswer(ctx, ctx.model.seriesJson(address, now), `p|${address}`, windowPart(now));
}

/** The answers that depend on the minute (freshness, the current hour's twap) carry it in their ETag. */
const minutePart = (now: number) => `m${Math.floor(now / 60_000)}`;

export function priceSourcesAnswer(ctx: HandlerContext, address: string): Representation {
  const now = ctx.now();
  const bytes = ctx.model.priceSourcesJson(address, now);
  if (!bytes) throw noToken(address);
  return jsonAnswer(ctx, bytes, `s|${address}`, minutePart(now));
}

export function candlesAnswer(ctx: HandlerContext, address: string): Representation {
  if (!ctx.model.token(address)) throw noToken(address);
  const now = ctx.now();
  return jsonAnswer(ctx, ctx.model.candlesJson(address, now), `c|${address}`, `${windowPart(now)}${minutePart(now)}`);
}

/** `addresses`: distinct, lower case, in request order (parseAddresses). */
export function pricesAnswer(ctx: HandlerContext, addresses: string[]): Representation {
  const now = ctx.now();
  const out = new Pieces();
  out.add(PRICES_OPEN);
  addresses.forEach((a, i) => {
    out.add(Buffer.from(`${i > 0 ? ',' : ''}"${a}":`, 'latin1')); // an address is ASCII
    out.add(ctx.model.seriesJson(a, now));
  });
  out.add(PRICES_CLOSE);
  return jsonAnswer(ctx, out.bytes(), `m|${addresses.join(',')}`, windowPart(now));
}
