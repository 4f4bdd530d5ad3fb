import type { RequestHandler } from 'express';
import type { ListQuery, OrderColumn } from '../repository.js';
import { supplyRepresentation, type SupplyKind } from '../handlers/supply.js';
import {
  candlesAnswer,
  listTokensAnswer,
  priceSourcesAnswer,
  pricesAnswer,
  tokenAnswer,
  tokenPricesAnswer,
} from './answers.js';
import { parseAddresses, type HandlerContext } from './context.js';
import { send, type Representation } from './representation.js';
import { negotiateSupplyFormat } from './negotiate.js';
import { isHexOfLength } from '../../common/eth/hex.js';
import { queryBoolean } from '../../common/http/boolean-params.js';
import { resolveRef, type OpenApiDocument } from '../../common/http/spec.js';

/**
 * Answers the common, well-formed requests before express routing and the spec validator, which cost more
 * than the answer itself once it comes from memory. It accepts only a strict subset of valid requests:
 * exact paths, no percent-encoding or `+`, each known parameter at most once with a value in its schema's
 * range, known tokens. Everything else, every error included, goes on to the validated route, so refusals
 * and problem documents stay exactly the spec validator's (a test compares both paths URL by URL).
 */

type ParamSchema = { minimum?: number; maximum?: number; enum?: string[]; default?: number | string } | undefined;

/** listTokens' query parameters by name, with their schemas as the spec states them (bounds, enums, defaults). */
function listParams(spec: OpenApiDocument): Map<string, ParamSchema> {
  const params = ((spec.paths['/tokens']?.get?.parameters ?? []) as unknown[]).map((p) => resolveRef(spec, p));
  return new Map(
    params.filter((p) => p.in === 'query').map((p) => [String(p.name), resolveRef(spec, p.schema) as ParamSchema]),
  );
}

/** Parses `a=1&b=2` into a map; undefined when anything is unusual (left to the validator). */
function simpleQuery(qs: string, allowed: { has(key: string): boolean }): Map<string, string> | undefined {
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

/** An integer within the schema's bounds written canonically (no sign, no leading zero, no exponent). */
function boundedInt(v: string | undefined, schema: ParamSchema): number | undefined {
  if (v === undefined) return schema?.default as number | undefined;
  if (!/^(0|[1-9][0-9]{0,8})$/.test(v)) return undefined;
  const n = Number(v);
  return n >= (schema?.minimum ?? -Infinity) && n <= (schema?.maximum ?? Infinity) ? n : undefined;
}

/** One of the schema's enum values, or its default when absent. */
function enumValue(v: string | undefined, schema: ParamSchema): string | undefined {
  const value = v ?? (schema?.default as string | undefined);
  return value !== undefined && schema?.enum?.includes(value) ? value : undefined;
}

function listQuery(qs: string, params: Map<string, ParamSchema>): ListQuery | undefined {
  const q = simpleQuery(qs, params);
  if (!q) return undefined;
  const page = boundedInt(q.get('page'), params.get('page'));
  const limit = boundedInt(q.get('limit'), params.get('limit'));
  const isSecure = q.get('isSecure');
  const order = enumValue(q.get('order'), params.get('order'));
  const sort = enumValue(q.get('sort'), params.get('sort'));
  if (page === undefined || limit === undefined || order === undefined || (sort !== 'asc' && sort !== 'desc'))
    return undefined;
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
type Found = [Representation, string, varyAccept?: boolean];
function answer(
  ctx: HandlerContext,
  params: Map<string, ParamSchema>,
  path: string,
  qs: string,
  accept: string | undefined,
): Found | undefined {
  if (path === '/tokens') {
    const q = listQuery(qs, params);
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
  if (address === undefined || !isHexOfLength(address, 20)) return undefined;
  const lower = address.toLowerCase();
  if (parts.length === 3 && (parts[1] === 'tokens' || parts[1] === 'prices')) {
    if (qs !== '' || ctx.model.token(lower) === undefined) return undefined;
    return parts[1] === 'tokens'
      ? [tokenAnswer(ctx, lower), '/tokens/:contractAddress']
      : [tokenPricesAnswer(ctx, lower), '/prices/:contractAddress'];
  }
  if (parts.length === 4 && qs === '' && ctx.model.token(lower) !== undefined) {
    if (parts[1] === 'tokens' && parts[3] === 'price-sources')
      return [priceSourcesAnswer(ctx, lower), '/tokens/:contractAddress/price-sources'];
    if (parts[1] === 'prices' && parts[3] === 'candles')
      return [candlesAnswer(ctx, lower), '/prices/:contractAddress/candles'];
    return undefined;
  }
  if (
    parts.length === 5 &&
    parts[1] === 'tokens' &&
    parts[3] === 'supply' &&
    (parts[4] === 'total' || parts[4] === 'circulating')
  ) {
    const format = simpleQuery(qs, FORMAT)?.get('format') ?? (qs === '' ? negotiateSupplyFormat(accept) : undefined);
    if ((format !== 'raw' && format !== 'json') || lower !== ctx.nativeToken) return undefined;
    const kind = parts[4] as SupplyKind;
    const rep = supplyRepresentation(ctx, kind, format);
    return rep && [rep, `/tokens/:contractAddress/supply/${kind}`, true];
  }
  return undefined;
}

/** `spec`: the token API's document, whose listTokens parameters bound what is answered here. */
export function fastPath(ctx: HandlerContext, spec: OpenApiDocument): RequestHandler {
  const params = listParams(spec);
  return (req, res, next) => {
    if (req.method !== 'GET') return next();
    const url = req.url;
    const q = url.indexOf('?');
    const found = answer(ctx, params, q < 0 ? url : url.slice(0, q), q < 0 ? '' : url.slice(q + 1), req.headers.accept);
    if (!found) return next();
    res.locals.route = found[1];
    if (found[2]) res.setHeader('Vary', 'Accept');
    send(req, res, found[0], { viaJson: false });
  };
}
