import type { RequestHandler } from 'express';
import type { ListQuery, OrderColumn } from '../repository.js';
import { ORDER_COLUMNS } from '../repository.js';
import { supplyRepresentation, type SupplyKind } from '../handlers/supply.js';
import { candlesAnswer, listTokensAnswer, priceSourcesAnswer, pricesAnswer, tokenAnswer, tokenPricesAnswer } from './answers.js';
import { parseAddresses, type HandlerContext } from './context.js';
import { send, type Representation } from './representation.js';
import { negotiateSupplyFormat } from './negotiate.js';
import { queryBoolean } from '../../common/http/boolean-params.js';

/**
 * Answers the common, well-formed requests before express routing and the spec validator, which cost more
 * than the answer itself once it comes from memory. It accepts only a strict subset of valid requests:
 * exact paths, no percent-encoding or `+`, each known parameter at most once with a value in its schema's
 * range, known tokens. Everything else, every error included, goes on to the validated route, so refusals
 * and problem documents stay exactly the spec validator's (a test compares both paths URL by URL).
 */

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const ORDERS = new Set<string>(ORDER_COLUMNS);
const LIST_PARAMS = new Set(['page', 'limit', 'isSecure', 'addresses', 'order', 'sort']);

/** Parses `a=1&b=2` into a map; undefined when anything is unusual (left to the validator). */
function simpleQuery(qs: string, allowed: Set<string>): Map<string, string> | undefined {
  const out = new Map<string, string>();
  if (qs === '') return out;
  if (qs.includes('%') || qs.includes('+')) return undefined;
  for (const pair of qs.split('&')) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || eq === pair.length - 1) return undefined;
    const key = pair.slice(0, eq);
    if (!allowed.has(key) || out.has(key)) return undefined;
    out.set(key, pair.slice(eq + 1));
  }
  return out;
}

/** An integer in 1..max written canonically (no sign, no leading zero, no exponent). */
function boundedInt(v: string | undefined, fallback: number, max: number): number | undefined {
  if (v === undefined) return fallback;
  if (!/^[1-9][0-9]{0,5}$/.test(v)) return undefined;
  const n = Number(v);
  return n <= max ? n : undefined;
}

function listQuery(qs: string): ListQuery | undefined {
  const q = simpleQuery(qs, LIST_PARAMS);
  if (!q) return undefined;
  const page = boundedInt(q.get('page'), 1, 1000);
  const limit = boundedInt(q.get('limit'), 50, 100);
  const isSecure = q.get('isSecure');
  const order = q.get('order') ?? 'fdv';
  const sort = q.get('sort') ?? 'desc';
  if (page === undefined || limit === undefined || !ORDERS.has(order) || (sort !== 'asc' && sort !== 'desc')) return undefined;
  const secure = isSecure === undefined ? undefined : queryBoolean(isSecure);
  if (isSecure !== undefined && secure === undefined) return undefined;
  let addresses: string[] | undefined;
  const raw = q.get('addresses');
  if (raw !== undefined) {
    try {
      addresses = parseAddresses(raw).sort();
    } catch {
      return undefined;
    }
  }
  return { page, limit, isSecure: secure, addresses, order: order as OrderColumn, sort };
}

const FORMAT = new Set(['format']);
const ADDRESSES = new Set(['addresses']);

/** The answer and its route template, or undefined to leave the request to the validated route. */
function answer(ctx: HandlerContext, path: string, qs: string, accept: string | undefined): [Representation, string, varyAccept?: boolean] | undefined {
  if (path === '/tokens') {
    const q = listQuery(qs);
    return q && [listTokensAnswer(ctx, q), '/tokens'];
  }
  if (path === '/prices') {
    const raw = simpleQuery(qs, ADDRESSES)?.get('addresses');
    if (raw === undefined) return undefined;
    try {
      return [pricesAnswer(ctx, parseAddresses(raw)), '/prices'];
    } catch {
      return undefined;
    }
  }
  const parts = path.split('/');
  const address = parts[2];
  if (address === undefined || !ADDRESS.test(address)) return undefined;
  const lower = address.toLowerCase();
  if (parts.length === 3 && (parts[1] === 'tokens' || parts[1] === 'prices')) {
    if (qs !== '' || ctx.model.token(lower) === undefined) return undefined;
    return parts[1] === 'tokens' ? [tokenAnswer(ctx, lower), '/tokens/:contractAddress'] : [tokenPricesAnswer(ctx, lower), '/prices/:contractAddress'];
  }
  if (parts.length === 4 && qs === '' && ctx.model.token(lower) !== undefined) {
    if (parts[1] === 'tokens' && parts[3] === 'price-sources') return [priceSourcesAnswer(ctx, lower), '/tokens/:contractAddress/price-sources'];
    if (parts[1] === 'prices' && parts[3] === 'candles') return [candlesAnswer(ctx, lower), '/prices/:contractAddress/candles'];
    return undefined;
  }
  if (parts.length === 5 && parts[1] === 'tokens' && parts[3] === 'supply' && (parts[4] === 'total' || parts[4] === 'circulating')) {
    const format = simpleQuery(qs, FORMAT)?.get('format') ?? (qs === '' ? negotiateSupplyFormat(accept) : undefined);
    if ((format !== 'raw' && format !== 'json') || lower !== ctx.nativeToken) return undefined;
    const kind = parts[4] as SupplyKind;
    const rep = supplyRepresentation(ctx, kind, format);
    return rep && [rep, `/tokens/:contractAddress/supply/${kind}`, true];
  }
  return undefined;
}

export function fastPath(ctx: HandlerContext): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'GET') return next();
    const url = req.url;
    const q = url.indexOf('?');
    const found = answer(ctx, q < 0 ? url : url.slice(0, q), q < 0 ? '' : url.slice(q + 1), req.headers.accept);
    if (!found) return next();
    res.locals.route = found[1];
    if (found[2]) res.setHeader('Vary', 'Accept');
    send(req, res, found[0], { viaJson: false });
  };
}
