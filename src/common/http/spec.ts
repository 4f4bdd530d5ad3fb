import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

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
  const root = here.includes('/dist/') ? here.slice(0, here.indexOf('/dist/')) : here.slice(0, here.lastIndexOf('/src/'));
  return `${root}/specs/${name}`;
}

export function loadOpenApi(name: string): OpenApiDocument {
  return parse(readFileSync(specPath(name), 'utf8')) as OpenApiDocument;
}
