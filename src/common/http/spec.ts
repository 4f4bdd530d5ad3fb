import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseYamlCached } from './spec-cache.js';

export interface OpenApiOperation {
  operationId: string;
  [key: string]: unknown;
}
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Partial<Record<'get' | 'post' | 'put' | 'patch' | 'delete', OpenApiOperation>>>;
  [key: string]: unknown;
}

/** Absolute path of a file in the repository's specs/ directory (works from src/ and from dist/src/). */
export function specPath(name: string): string {
  const here = fileURLToPath(import.meta.url);
  const root = here.includes('/dist/')
    ? here.slice(0, here.indexOf('/dist/'))
    : here.slice(0, here.lastIndexOf('/src/'));
  return `${root}/specs/${name}`;
}

export function loadOpenApi(name: string): OpenApiDocument {
  return parseYamlCached(name, readFileSync(specPath(name), 'utf8')) as OpenApiDocument;
}

/**
 * A node of the document with its local `$ref` chain followed (at most 20 hops, so a cycle ends); a node
 * without a `$ref`, or a reference that leads nowhere, comes back as it is (or as an empty object).
 */
export function resolveRef(doc: OpenApiDocument, node: unknown, depth = 0): Record<string, unknown> {
  const ref = (node as { $ref?: unknown } | undefined)?.$ref;
  if (typeof ref !== 'string' || depth > 20) return (node ?? {}) as Record<string, unknown>;
  let cur: unknown = doc;
  for (const part of ref.replace(/^#\//, '').split('/'))
    cur = (cur as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return resolveRef(doc, cur, depth + 1);
}
