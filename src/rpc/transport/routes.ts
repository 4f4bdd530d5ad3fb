import type { Logger } from '../../common/log.js';
import { redactHosts, toReadiness, type Check } from '../../common/http/operator.js';
import { type Awaitable } from '../types.js';
import { errorBody } from '../envelope.js';
import { RpcCodes } from '../errors.js';
import { isRpcPath } from '../keys/access.js';
import type { CoreOptions } from './core.js';

export type ReadinessView = 'public' | 'operator';

/** What the public port serves besides JSON-RPC, whichever stack carries it. */
export interface RpcAppOptions extends CoreOptions {
  /**
   * The checks of /health/ready (src/common/http/operator.ts), in a fixed order. `public`: what anyone may
   * read (no internal host, URL or driver message); `operator`: full detail, for the operator port only.
   */
  readiness(view: ReadinessView): Promise<Check[]>;
  /**
   * Whether /metrics and /health/* are served on this (public) listener. False when RPC_OPERATOR_PORT
   * serves them (its own node:http listener, common/http/operator.ts): then they are 404 here.
   */
  operatorRoutes: boolean;
  /** RPC_CORS_ORIGINS: '*' (default), or the origins echoed back (empty: no CORS headers at all). */
  corsOrigins: '*' | readonly string[];
}

export type Cors = (origin: string | undefined) => string[];

/**
 * The CORS headers of one JSON-RPC answer as a flat list. '*' is the deliberate default of a public endpoint:
 * dapps call it from any page, and nothing rides on cookies (a key is in the URL or a header the page itself
 * sends). A list echoes only a listed Origin, with Vary so caches keep them apart.
 */
export function corsPolicy(origins: '*' | readonly string[]): Cors {
  if (origins === '*') {
    const any = ['access-control-allow-origin', '*'];
    return () => any;
  }
  if (origins.length === 0) return () => [];
  const allowed = new Set(origins);
  const vary = ['vary', 'Origin'];
  return (origin) =>
    origin !== undefined && allowed.has(origin) ? ['access-control-allow-origin', origin, 'vary', 'Origin'] : vary;
}

/** The extra headers of a CORS preflight answer (OPTIONS) when the origin is allowed. */
const PREFLIGHT_HEADERS = [
  'access-control-allow-methods',
  'POST, GET, OPTIONS',
  'access-control-allow-headers',
  'content-type, x-api-key',
  'access-control-max-age',
  '86400',
];

/** An answer of a route: status, headers as a flat list (name, value, …), and the body (none for 204). */
export interface RouteAnswer {
  status: number;
  headers: readonly string[];
  body?: string;
}

const INTERNAL_ERROR: RouteAnswer = {
  status: 500,
  headers: ['content-type', 'application/json'],
  body: errorBody(RpcCodes.Internal, 'internal error'),
};

/** A request that failed inside the endpoint, on either stack: logged here, a bare JSON-RPC error to the client. */
export function requestFailed(logger: Logger, err: unknown): RouteAnswer {
  logger.error({ err }, 'request failed');
  return INTERNAL_ERROR;
}

const JSON_UTF8 = 'application/json; charset=utf-8';
const json = (status: number, body: unknown, headers: readonly string[] = []): RouteAnswer => ({
  status,
  headers: [...headers, 'content-type', JSON_UTF8],
  body: JSON.stringify(body),
});

/**
 * Every request but POST on the JSON-RPC path, as one table both stacks serve: CORS preflight of the JSON-RPC
 * path, GET (or HEAD) /health/live, /health/ready (the public view, any host a check let slip cut out) and
 * /metrics unless RPC_OPERATOR_PORT serves them, JSON 405 on `/` and 404 elsewhere. CORS headers belong to
 * the JSON-RPC path only: a page has no business reading /metrics or /health/*. `path` is without its query.
 */
export function otherRoutes(
  o: RpcAppOptions,
  cors: Cors,
): (method: string, path: string, origin: string | undefined) => Awaitable<RouteAnswer> {
  const readiness = async () =>
    toReadiness(
      (await o.readiness('public')).map((c) => (c.detail === undefined ? c : { ...c, detail: redactHosts(c.detail) })),
    );
  const operator = new Map<string, () => Promise<RouteAnswer>>(
    o.operatorRoutes === false
      ? []
      : [
          ['/health/live', async () => json(200, { status: 'ok' })],
          ['/health/ready', async () => readiness().then((body) => json(body.status === 'ok' ? 200 : 503, body))],
          [
            '/metrics',
            async () => ({
              status: 200,
              headers: ['content-type', o.metrics.contentType],
              body: await o.metrics.metrics(),
            }),
          ],
        ],
  );
  return (method, path, origin) => {
    const route = method === 'GET' || method === 'HEAD' ? operator.get(path) : undefined;
    if (route) return route().catch((err: unknown) => requestFailed(o.logger, err));
    const rpc = isRpcPath(path);
    const headers = rpc ? cors(origin) : [];
    if (method === 'OPTIONS' && rpc)
      return {
        status: 204,
        headers: headers.includes('access-control-allow-origin') ? [...headers, ...PREFLIGHT_HEADERS] : headers,
      };
    return path === '/'
      ? json(405, { error: 'JSON-RPC is served by POST /' }, headers)
      : json(404, { error: `no route for ${method} ${path}` }, headers);
  };
}
