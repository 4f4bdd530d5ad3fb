import type { RequestListener } from 'node:http';
import express, { type Express, type RequestHandler } from 'express';
import type { Registry } from 'prom-client';

/**
 * The operator surface every server shares (token API, JSON-RPC endpoint, relayer API), written once so
 * a probe or a dashboard reads the three the same way:
 *   GET /health/live   200 {"status":"ok"}: the process answers; nothing else is checked.
 *   GET /health/ready  200 or 503 with one body shape, the `Readiness` schema of the relayer spec:
 *                      {"status":"ok"|"unavailable","checks":[{"name","ok","detail"?}]}.
 *   GET /metrics       the process registry in the Prometheus text format.
 */

/** The result of one readiness check; `detail` says why it failed, or a state that is fine ("standing by"). */
export interface Check {
  name: string;
  ok: boolean;
  detail?: string;
}

export interface Readiness {
  /** `ok` (HTTP 200) only when every check passed; else `unavailable` (HTTP 503). */
  status: 'ok' | 'unavailable';
  checks: Check[];
}

export const toReadiness = (checks: Check[]): Readiness => ({
  status: checks.every((c) => c.ok) ? 'ok' : 'unavailable',
  checks,
});

export interface OperatorOptions {
  metrics: Registry;
  /** The service's checks, in a fixed order. */
  readiness: () => Promise<Check[]>;
}

export const livenessHandler = (): RequestHandler => (_req, res) => {
  res.json({ status: 'ok' });
};

export const readinessHandler =
  (readiness: () => Promise<Check[]>): RequestHandler =>
  async (_req, res) => {
    const body = toReadiness(await readiness());
    res.status(body.status === 'ok' ? 200 : 503).json(body);
  };

export const metricsHandler =
  (registry: Registry): RequestHandler =>
  async (_req, res) => {
    const body = await registry.metrics();
    res.setHeader('content-type', registry.contentType);
    res.send(body);
  };

/** Mounts the three routes on a server whose spec does not bind them to operations (token API, RPC). */
export function mountOperatorRoutes(app: Express, options: OperatorOptions): void {
  app.get('/health/live', livenessHandler());
  app.get('/health/ready', readinessHandler(options.readiness));
  app.get('/metrics', metricsHandler(options.metrics));
}

/**
 * A listener with the three routes only (a service's separate operator port): JSON 404 for anything else,
 * no CORS headers, nothing a browser page could be allowed to read.
 */
export function operatorListener(options: OperatorOptions): RequestListener {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  mountOperatorRoutes(app, options);
  const served = 'this port serves /health/live, /health/ready and /metrics';
  app.use((req, res) => {
    res.status(404).json({ error: `no route for ${req.method} ${req.path}: ${served}` });
  });
  return app;
}

// scheme://anything, then host:port and bare IPv4 addresses: what a check's detail may carry from a URL or a
// driver message ("connect ECONNREFUSED 10.0.0.7:5432").
const URLS = /\b[a-z][a-z0-9+.-]*:\/\/[^\s;,)]+/gi;
const HOST_PORTS =
  /\[[0-9A-Fa-f:.]+\](?::\d+)?|\b[A-Za-z0-9-]*[A-Za-z.][A-Za-z0-9.-]*:\d{2,5}\b|\b\d{1,3}(?:\.\d{1,3}){3}\b/g;

/** A readiness detail fit for a public port: every URL, host:port and IPv4 address replaced by "<internal>". */
export const redactHosts = (detail: string): string =>
  detail.replace(URLS, '<internal>').replace(HOST_PORTS, '<internal>');
