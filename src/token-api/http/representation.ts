import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';

/** A serialized 200 response: what `send` writes. */
export interface Representation {
  body: Buffer;
  contentType: string;
  etag: string;
  maxAgeSeconds: number;
  /** The JSON value behind `body`, kept so response validation (tests) can see it through res.json. */
  value?: unknown;
}

/** A strong ETag from the body's SHA-1: equal bodies, equal tags, across replicas and restarts. */
export function etagOf(body: Buffer | string): string {
  return `"${createHash('sha1').update(body).digest('base64url')}"`;
}

export function jsonRepresentation(value: unknown, maxAgeSeconds: number): Representation {
  const body = Buffer.from(JSON.stringify(value));
  return { body, contentType: 'application/json; charset=utf-8', etag: etagOf(body), maxAgeSeconds, value };
}

export function textRepresentation(text: string, maxAgeSeconds: number): Representation {
  const body = Buffer.from(text);
  return { body, contentType: 'text/plain; charset=utf-8', etag: etagOf(body), maxAgeSeconds };
}

/** RFC 9110 weak comparison against an If-None-Match list (`*` matches anything). */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const opaque = etag.replace(/^W\//, '');
  for (const raw of header.split(',')) {
    const tag = raw.trim();
    if (tag === '*' || tag.replace(/^W\//, '') === opaque) return true;
  }
  return false;
}

/**
 * Any operation's request and response: the typed handlers (OperationHandler) narrow params, query and body,
 * and the helpers that only read headers and the URL take them all.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRequest = Request<any, any, unknown, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyResponse = Response<any>;

/** Writes a 200 with ETag and Cache-Control, or a bodiless 304 when the client's tag still matches. */
export function send(req: AnyRequest, res: AnyResponse, rep: Representation, options: { viaJson: boolean }): void {
  res.setHeader('ETag', rep.etag);
  res.setHeader('Cache-Control', `public, max-age=${rep.maxAgeSeconds}`);
  if (ifNoneMatchHits(req.headers['if-none-match'], rep.etag)) {
    res.status(304).end();
    return;
  }
  if (options.viaJson && rep.value !== undefined) {
    res.status(200).json(rep.value);
    return;
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', rep.contentType);
  res.setHeader('Content-Length', rep.body.length);
  res.end(rep.body);
}
