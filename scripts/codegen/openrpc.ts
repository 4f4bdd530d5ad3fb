import { mkdir, readFile, writeFile, readdir, rm, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { dereferenceDocument } from '@open-rpc/schema-utils-js';
import { HEADER, type Generator } from './types.js';

type Doc = Parameters<typeof dereferenceDocument>[0];

// Both packages are CommonJS exporting `exports.default`; require() gives the exact shape without ESM interop guessing.
const require = createRequire(import.meta.url);
interface Typings {
  toString(
    language: 'typescript',
    options: { includeSchemaTypings: boolean; includeMethodAliasTypings: boolean },
  ): string;
}
const MethodTypings = (require('@open-rpc/typings') as { default: new (doc: unknown) => Typings }).default;
// The alias name @open-rpc/typings gives each method (eth_getBalance → EthGetBalance), so the map below names exactly
// its types.
const { getMethodAliasName } = require('@open-rpc/typings/build/typescript') as {
  getMethodAliasName: (method: { name: string }) => string;
};
type GeneratorOptions = {
  openrpcDocument: string;
  outDir: string;
  components: { type: 'client'; language: 'typescript'; name: string }[];
};
const generate = (require('@open-rpc/generator') as { default: (options: GeneratorOptions) => Promise<void> }).default;

/** Param and result typings per method, for our handlers (one alias per method, from the spec). */
export const openrpcTypings: Generator = async (target, { root, outRoot }) => {
  const doc = JSON.parse(await readFile(join(root, target.input), 'utf8')) as Doc;
  const deref = await dereferenceDocument(doc);
  const typings = new MethodTypings(deref).toString('typescript', {
    includeSchemaTypings: true,
    includeMethodAliasTypings: true,
  });
  const file = join(outRoot, target.output);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${HEADER}/* eslint-disable */\n${typings}\n${methodMap(deref.methods as { name: string }[])}`);
};

/**
 * Method name → positional params tuple and result, derived from the per-method aliases above, so
 * defineMethod (src/rpc/context.ts) can type each handler by the spec: a handler returning a shape the
 * spec does not allow fails the typecheck.
 */
function methodMap(methods: { name: string }[]): string {
  const rows = methods.map((m) => {
    const alias = getMethodAliasName(m);
    return `  ${m.name}: { params: Parameters<${alias}>; result: Awaited<ReturnType<${alias}>> };`;
  });
  return [
    '/** Every method of the spec: its positional params (a labelled tuple) and its result. */',
    'export interface RpcMethodMap {',
    ...rows,
    '}',
    '/** A method name of the spec. */',
    'export type RpcMethodName = keyof RpcMethodMap;',
    '',
  ].join('\n');
}

/**
 * The TypeScript client integrators get from @open-rpc/generator, kept as generated (a standalone
 * package under generated/rpc/client) so our tests can build it exactly as an integrator would.
 */
export const openrpcClient: Generator = async (target, { root, outRoot }) => {
  const out = join(outRoot, target.output);
  const tmp = `${out}.tmp`;
  await rm(tmp, { recursive: true, force: true });
  await generate({
    openrpcDocument: join(root, target.input),
    outDir: tmp,
    components: [{ type: 'client', language: 'typescript', name: String(target.options?.name ?? 'RpcClient') }],
  });
  // The generator nests its output as client/typescript/; flatten it to the target directory.
  const produced = join(tmp, 'client', 'typescript');
  await rm(out, { recursive: true, force: true });
  await mkdir(dirname(out), { recursive: true });
  await rename(produced, out);
  await rm(tmp, { recursive: true, force: true });
  await readdir(out);
};
