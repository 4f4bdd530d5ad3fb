import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { HEADER, type Generator } from './types.js';

export const openapiTypes: Generator = async (target, { root, outRoot }) => {
  const ast = await openapiTS(pathToFileURL(join(root, target.input)), { exportType: false, alphabetize: false });
  const file = join(outRoot, target.output);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, HEADER + astToString(ast));
};

export const openapiFetchClient: Generator = async (target, { outRoot }) => {
  const factory = String(target.options?.factory ?? 'createApiClient');
  const file = join(outRoot, target.output);
  const body = `${HEADER}import createClient, { type ClientOptions } from 'openapi-fetch';
import type { paths } from './schema.js';

export type { paths, components, operations } from './schema.js';

/** A typed client for ${target.input}: paths, parameters and bodies are checked against the spec. */
export function ${factory}(baseUrl: string, options: Omit<ClientOptions, 'baseUrl'> = {}) {
  return createClient<paths>({ baseUrl, ...options });
}
`;
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, body);
};
