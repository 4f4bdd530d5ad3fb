import type { Express } from 'express';
import type { operations } from '../../generated/token-api/schema.js';
import { stringify } from 'yaml';
import type { Common } from '../common/kernel.js';
import { createHttpApp } from '../common/http/app.js';
import { mountOperatorRoutes } from '../common/http/operator.js';
import { sendProblem } from '../common/http/problem.js';
import { rateLimitMiddleware, type HttpRateLimit } from '../common/http/rate-limit.js';
import { loadOpenApi, type OpenApiDocument } from '../common/http/spec.js';
import { counter, histogram } from '../common/metrics.js';
import { mountDocs } from './http/docs.js';
import type { HandlerContext } from './http/context.js';
import { fastPath } from './http/fast-path.js';
import { generatedLogoSvg } from './http/logo.js';
import { tokenApiHandlers } from './handlers/index.js';
import type { ReadinessReport } from './readiness.js';

export const TOKEN_API_SPEC_FILE = 'token-api.openapi.yaml';

/** The spec as we serve it: the file's content, with our own URL first in `servers` once it is known. */
function servedSpec(spec: OpenApiDocument, url: string | undefined): OpenApiDocument {
  if (!url) return spec;
  const servers = ((spec.servers as { url: string }[] | undefined) ?? []).filter((s) => s.url !== url);
  return { ...spec, servers: [{ url, description: 'This server.' }, ...servers] };
}

/**
 * The express app of the token API: the six operations bound from the spec, plus the spec itself
 * (/openapi.json, /openapi.yaml), the reference page (/docs), generated logos, health and metrics.
 */
export function createTokenApiApp(options: {
  common: Common;
  ctx: HandlerContext;
  ready: () => Promise<ReadinessReport>;
  publicUrl: () => string | undefined;
  /**
   * Per-address limit of the token and price routes (before the fast path: a flood of cheap answers still takes the
   * thread).
   */
  rateLimit?: Omit<HttpRateLimit, 'variable'>;
}): Express {
  const { common, ctx } = options;
  const spec = loadOpenApi(TOKEN_API_SPEC_FILE);
  let served: { url: string | undefined; json: string; yaml: string } | undefined;
  const specTexts = () => {
    const url = options.publicUrl();
    if (served === undefined || served.url !== url) {
      const doc = servedSpec(spec, url);
      served = { url, json: JSON.stringify(doc), yaml: stringify(doc) };
    }
    return served;
  };
  const requests = counter(
    common.metrics,
    'l2stack_token_api_requests_total',
    'Token API responses by route and status',
    ['route', 'status'],
  );
  const duration = histogram(
    common.metrics,
    'l2stack_token_api_request_duration_seconds',
    'Token API response time by route',
    ['route'],
  );

  return createHttpApp<operations>({
    spec,
    logger: common.logger.child({ module: 'token-api' }),
    validateResponses: ctx.validateResponses,
    handlers: tokenApiHandlers(ctx),
    extraRoutes: (app) => {
      app.use((req, res, next) => {
        const started = process.hrtime.bigint();
        res.once('finish', () => {
          const route = (req.route?.path as string | undefined) ?? (res.locals.route as string | undefined) ?? 'other';
          requests.inc({ route, status: String(res.statusCode) });
          duration.observe({ route }, Number(process.hrtime.bigint() - started) / 1e9);
        });
        next();
      });
      if (options.rateLimit && options.rateLimit.perSecond > 0) {
        app.use(
          ['/tokens', '/prices'],
          rateLimitMiddleware({
            ...options.rateLimit,
            variable: 'TOKEN_API_RATE_LIMIT_PER_SECOND / TOKEN_API_RATE_LIMIT_BURST',
          }),
        );
      }
      // The read model's answers for well-formed requests, ahead of routing and validation (fast-path.ts).
      // Off when our responses are validated (tests), so every answer there passes the validator.
      if (!ctx.validateResponses) app.use(fastPath(ctx, spec));
      app.get('/openapi.json', (_req, res) => void res.type('application/json').send(specTexts().json));
      app.get('/openapi.yaml', (_req, res) => void res.type('application/yaml').send(specTexts().yaml));
      mountDocs(app);
      app.get('/logos/:file', (req, res) => {
        const m = /^(0x[0-9a-fA-F]{40})\.svg$/.exec(String(req.params.file));
        if (!m)
          return sendProblem(res, {
            status: 404,
            detail: 'logos are /logos/<contract address>.svg',
            instance: req.originalUrl,
          });
        res.setHeader('Cache-Control', 'public, max-age=86400, immutable');
        res.type('image/svg+xml').send(generatedLogoSvg(m[1]!));
      });
      mountOperatorRoutes(app, { metrics: common.metrics, readiness: async () => (await options.ready()).checks });
    },
  });
}
