import { readFileSync } from 'node:fs';
import { dereferenceDocument } from '@open-rpc/schema-utils-js';
import { specPath } from '../common/http/spec.js';

export interface SpecMethod {
  name: string;
  params: { name: string; required?: boolean; schema?: unknown }[];
  result: { name: string; schema: unknown };
}

export interface RpcSpec {
  /** specs/rpc.openrpc.json as written ($refs intact): what rpc.discover returns. */
  document: Record<string, unknown>;
  /** The same with every $ref resolved: what the Router validates against. */
  dereferenced: { methods: SpecMethod[] } & Record<string, unknown>;
}

let cached: Promise<RpcSpec> | undefined;

export function loadRpcSpec(): Promise<RpcSpec> {
  cached ??= (async () => {
    const text = readFileSync(specPath('rpc.openrpc.json'), 'utf8');
    const document = JSON.parse(text) as Record<string, unknown>;
    const dereferenced = (await dereferenceDocument(JSON.parse(text) as never)) as unknown as RpcSpec['dereferenced'];
    return { document, dereferenced };
  })();
  return cached;
}
