import express, { type Express, type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { strictNumericParams } from './numeric-params.js';
import { lenientBooleanParams } from './boolean-params.js';
import { problemHandler, sendProblem } from './problem.js';
import type { Logger } from '../log.js';
import type { OpenApiDocument } from './spec.js';

/**
 * One handler per operation of a spec, keyed on the generated `operations` interface of that spec
 * (generated/<api>/schema.ts): an operation without a handler, or a handler for an operationId the spec does not have,
 * fails `npm run typecheck` (and start-up, for documents only known at run time).
 */
export type OperationHandlers<Operations> = {
  [OperationId in keyof Operations & string]: OperationHandler<Operations[OperationId]> | RequestHandler;
};

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type Responses<Op> = Op extends { responses: infer R } ? R : never;

/**
 * The handler of one generated operation: its path parameters and its query as the spec types them (the validator has
 * checked and coerced them before the handler runs), and `res.json` takes only a body one of its responses documents.
 */
export type OperationHandler<Op> = RequestHandler<
  Op extends { parameters: { path: infer P } }
    ? P extends undefined
      ? Record<string, never>
      : P
    : Record<string, never>,
  { [S in keyof Responses<Op>]: JsonOf<Responses<Op>[S]> }[keyof Responses<Op>],
  unknown,
  Op extends { parameters: { query?: infer Q } } ? NonNullable<Q> : Record<string, never>
>;

export interface HttpAppOptions<Operations> {
  /** The parsed OpenAPI document the app serves and validates against. */
  spec: OpenApiDocument;
  handlers: OperationHandlers<Operations>;
  logger: Logger;
  /** Validate our own responses too (on in tests: a response that breaks the spec is a 500 there). */
  validateResponses?: boolean;
  /** Routes outside the spec (docs page, spec download, health) mounted before validation. */
  extraRoutes?: (app: Express) => void;
}

const toExpressPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');

/**
 * Builds an express app whose routes come from the spec: each operationId is bound to its handler, so a missing handler
 * fails at start-up, not at the first request. Requests are validated by express-openapi-validator against the same
 * document, and every error ends in problem+json.
 */
export function createHttpApp<Operations>(options: HttpAppOptions<Operations>): Express {
  const { spec, handlers, logger } = options;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false); // handlers set strong ETags themselves where the spec documents them
  app.set('query parser', 'simple');
  options.extraRoutes?.(app);

  // Before the validator, whose Number() coercion lets 1e309, 1e2 and 0x10 through as integers.
  app.use(strictNumericParams(spec));
  app.use(lenientBooleanParams(spec)); // True/False/1/0 as generated clients write them
  app.use(
    OpenApiValidator.middleware({
      apiSpec: spec as never,
      validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true },
      validateResponses: options.validateResponses ? { removeAdditional: false } : false,
      // Checking the document against the OpenAPI schema cost ~0.2 s at every start; our specs are checked by
      // test/contract/specs.test.ts, and wherever responses are validated (tests) it runs here too.
      validateApiSpec: options.validateResponses === true,
      ignoreUndocumented: false,
    }),
  );

  const bound = new Set<string>();
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete'] as const) {
      const op = item[method];
      if (!op) continue;
      const handler = (handlers as Record<string, RequestHandler | undefined>)[op.operationId];
      if (!handler) throw new Error(`no handler for operation ${op.operationId} (${method.toUpperCase()} ${path})`);
      app[method](toExpressPath(path), handler);
      bound.add(op.operationId);
    }
  }
  for (const id of Object.keys(handlers))
    if (!bound.has(id)) throw new Error(`handler ${id} matches no operation of the spec`);

  app.use((req, res) =>
    sendProblem(res, { status: 404, detail: `no route for ${req.method} ${req.path}`, instance: req.originalUrl }),
  );
  app.use(problemHandler(logger));
  return app;
}
