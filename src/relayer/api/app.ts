import type { Express } from 'express';
import type { operations } from '../../../generated/relayer-api/schema.js';
import { createHttpApp } from '../../common/http/app.js';
import { loadOpenApi } from '../../common/http/spec.js';
import type { Logger } from '../../common/log.js';
import { adminActionHandler, type ApiContext } from './context.js';
import { livenessHandler, metricsHandler, readinessHandler } from '../../common/http/operator.js';
import { getMessage } from './getMessage.js';
import { rateLimitMiddleware, type HttpRateLimit } from '../../common/http/rate-limit.js';
import { listMessages } from './listMessages.js';
import { getMessageHistory } from './getMessageHistory.js';
import { adminAuth, type AdminAuthOptions } from './admin-auth.js';

/** The relayer's HTTP API, bound to specs/relayer-api.openapi.yaml (one handler per operationId). */
export function createRelayerApp(
  ctx: ApiContext,
  logger: Logger,
  options: {
    validateResponses?: boolean;
    rateLimit?: Omit<HttpRateLimit, 'variable'>;
    admin?: Omit<AdminAuthOptions, 'trustedProxyHops'>;
  } = {},
): Express {
  const limit = options.rateLimit
    ? rateLimitMiddleware({ ...options.rateLimit, variable: 'API_RATE_LIMIT_PER_SECOND / API_RATE_LIMIT_BURST' })
    : undefined;
  return createHttpApp<operations>({
    spec: loadOpenApi('relayer-api.openapi.yaml'),
    logger,
    validateResponses: options.validateResponses,
    // Only the message routes read the database per request; probes and metrics stay reachable for operators.
    // The admin gate runs first (before validation, so a disabled API answers 403 whatever the request).
    extraRoutes: (app) => {
      const gate = adminAuth({
        token: options.admin?.token,
        maxFailures: options.admin?.maxFailures,
        windowMs: options.admin?.windowMs,
        trustedProxyHops: options.rateLimit?.trustedProxyHops ?? 0,
      });
      app.use(['/messages/:messageHash/retry', '/messages/:messageHash/abandon'], gate);
      if (limit) app.use('/messages', limit);
    },
    handlers: {
      // The operator routes every server shares (src/common/http/operator.ts), bound to this spec's operations.
      getMetrics: metricsHandler(ctx.registry),
      getLiveness: livenessHandler(),
      getReadiness: readinessHandler(() => ctx.readiness()),
      getMessage: getMessage(ctx),
      listMessages: listMessages(ctx),
      getMessageHistory: getMessageHistory(ctx),
      // POST /messages/{messageHash}/retry (back into claiming with fresh counters) and /abandon (to ABANDONED,
      // never claimed): src/relayer/db/admin.ts.
      retryMessage: adminActionHandler(ctx, 'retry'),
      abandonMessage: adminActionHandler(ctx, 'abandon'),
    },
  });
}
