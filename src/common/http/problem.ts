import type { ErrorRequestHandler, Response } from 'express';
import { HttpError } from '../errors.js';
import type { Logger } from '../log.js';
import { DatabaseUnavailableError } from '../db/errors.js';

/** RFC 9457 problem details, the body of every 4xx/5xx of our HTTP APIs. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  errors?: { path: string; message: string }[];
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

type ProblemInput = Omit<Problem, 'type' | 'title'> & { title?: string; type?: string };

/** The problem+json text of `problem`, its title from the status unless given (for raw node:http answers too). */
export function problemText(problem: ProblemInput): string {
  const body: Problem = { type: 'about:blank', title: problem.title ?? TITLES[problem.status] ?? 'Error', ...problem };
  return JSON.stringify(body);
}

export function sendProblem(res: Response, problem: ProblemInput): void {
  res.status(problem.status).type('application/problem+json').send(problemText(problem));
}

interface ValidatorError {
  status: number;
  message: string;
  errors?: { path: string; message: string; errorCode?: string }[];
  headers?: Record<string, string>;
}

/** "/params/id" → "path/id", ".query.limit" → "query/limit": names a client can map to its request. */
function parameterPath(raw: string): string {
  const p = raw
    .replace(/^[./]+/, '')
    .replace(/^(request|response)[./]/, '')
    .replace(/\./g, '/');
  return p.replace(/^params\//, 'path/');
}

const isValidatorError = (err: unknown): err is ValidatorError =>
  typeof err === 'object' &&
  err !== null &&
  typeof (err as { status?: unknown }).status === 'number' &&
  'errors' in err;

/**
 * The single place where errors become HTTP responses: every failure is problem+json, never Express's
 * HTML page, never a stack trace. Unknown errors are logged and answered with a generic 500.
 */
export function problemHandler(logger: Logger): ErrorRequestHandler {
  const dbWarned = { at: 0, skipped: 0 };
  return (err, req, res, next) => {
    if (res.headersSent) return next(err);
    const instance = req.originalUrl;
    if (err instanceof HttpError) {
      return sendProblem(res, {
        status: err.status,
        title: err.title,
        detail: err.shortMessage,
        instance,
        ...(err.meta ?? {}),
      });
    }
    if (isValidatorError(err) && err.status < 500) {
      // express-openapi-validator: name each failing parameter, e.g. "query/limit must be <= 100".
      const errors = (err.errors ?? []).map((e) => ({ path: parameterPath(e.path), message: e.message }));
      const detail = errors.length > 0 ? errors.map((e) => `${e.path} ${e.message}`).join('; ') : err.message;
      for (const [k, v] of Object.entries(err.headers ?? {})) res.setHeader(k, v);
      return sendProblem(res, { status: err.status, detail, instance, errors });
    }
    if (err instanceof DatabaseUnavailableError) {
      // An outage, not a bug: the client may try again. The operator sees one warning per 5 s with the count of
      // the others (a stack per request would flood the log). The host is not named to clients: internal.
      const now = Date.now();
      if (now - dbWarned.at >= 5_000) {
        logger.warn(
          {
            method: req.method,
            url: req.originalUrl,
            answered503Since: dbWarned.skipped,
            err: err.shortMessage.split('\n')[0],
          },
          'database unavailable: answering 503',
        );
        dbWarned.at = now;
        dbWarned.skipped = 0;
      } else dbWarned.skipped++;
      res.setHeader('retry-after', '5');
      return sendProblem(res, { status: 503, detail: 'The database is unavailable; try again later.', instance });
    }
    const status = (err as { status?: unknown; type?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      // body-parser and similar: their message is safe and useful ("request entity too large").
      return sendProblem(res, { status, detail: String((err as Error).message ?? 'bad request'), instance });
    }
    logger.error({ err, method: req.method, url: req.originalUrl }, 'unhandled error');
    return sendProblem(res, { status: 500, detail: 'An unexpected error occurred; it has been logged.', instance });
  };
}
