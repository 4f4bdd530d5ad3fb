import { readFileSync, readdirSync } from 'node:fs';
import Ajv from 'ajv';
import { parse } from 'yaml';

type Schema = Record<string, unknown>;

const VENDORED = new URL('./execution-apis/', import.meta.url);
const DOC_ID = 'execution-apis';

/**
 * Members the node (anvil 1.7) adds to objects the execution-apis close with `additionalProperties: false`,
 * described as the node writes them: receipts carry `blockTimestamp` as a JSON number (1795418725, not a
 * Quantity). We pass them on, not strip them: pass-through answers are forwarded as the node's bytes
 * (stripping means parsing and re-serializing every receipt, the cost issue 16 removes), clients (viem,
 * ethers) ignore members they do not know, and `blockTimestamp` is the member the execution-apis already
 * added to Log and TransactionInfo. Any other extra member, or this one in another form, fails the check.
 */
export const NODE_ADDITIONS: Record<string, Record<string, Schema>> = {
  ReceiptInfo: { blockTimestamp: { type: 'integer', minimum: 0 } },
};

/**
 * Members the execution-apis require that the node (anvil 1.7.1) leaves out, by method: its eth_simulateV1
 * blocks carry no `size` (docs/rpc-limits.md says so). Passed on as the node writes them; any other missing member,
 * or this one in another method, fails the check.
 */
export const NODE_GAPS: Record<string, string[]> = { eth_simulateV1: ['size'] };

interface AjvError {
  keyword: string;
  params: Record<string, unknown>;
}
/**
 * The execution-apis result of eth_getLogs/eth_getFilterChanges/eth_getFilterLogs is a oneOf of arrays (of
 * hashes, of logs): an empty array matches every branch, so a strict oneOf refuses the one answer that is
 * surely right. Only that case is forgiven: every error is a oneOf that more than one branch passed.
 */
const onlyAmbiguousOneOf = (result: unknown, errors: AjvError[] | null | undefined) =>
  Array.isArray(result) &&
  result.length === 0 &&
  (errors ?? []).length > 0 &&
  (errors ?? []).every((e) => e.keyword === 'oneOf' && Array.isArray(e.params.passingSchemas));

const readYaml = (dir: string) =>
  readdirSync(new URL(dir, VENDORED))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => parse(readFileSync(new URL(`${dir}${f}`, VENDORED), 'utf8')) as unknown);

/** "#/components/schemas/X" inside a method's schema points into the vendored components document. */
function rebase(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rebase);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `${DOC_ID}${v}` : rebase(v),
    ]),
  );
}

export interface ExecutionApisCheck {
  /** Methods the vendored files define. */
  methods: Set<string>;
  /**
   * Checks one result against the vendored result schema of the method: `problem` when it does not conform
   * (with the listed node additions allowed), `additions` naming the allowed additions it carried.
   */
  check(method: string, result: unknown): { problem?: string; additions: string[] };
}

/** The official execution-apis method and schema files vendored under test/conformance/execution-apis (CC0). */
export function executionApis(): ExecutionApisCheck {
  const schemas = Object.assign({}, ...readYaml('schemas/')) as Record<string, Schema>;
  const methods = (readYaml('methods/') as { name: string; result: { schema: Schema } }[][]).flat();
  const lenientSchemas = Object.fromEntries(
    Object.entries(schemas).map(([name, s]) => [
      name,
      NODE_ADDITIONS[name] ? { ...s, properties: { ...(s.properties as Schema), ...NODE_ADDITIONS[name] } } : s,
    ]),
  );
  const strict = new Ajv({ allErrors: true });
  const lenient = new Ajv({ allErrors: true });
  strict.addSchema({ components: { schemas } }, DOC_ID);
  lenient.addSchema({ components: { schemas: lenientSchemas } }, DOC_ID);
  const byName = new Map(methods.map((m) => [m.name, rebase(m.result.schema) as Schema]));
  const compiled = new Map<string, { strict: Ajv.ValidateFunction; lenient: Ajv.ValidateFunction }>();
  return {
    methods: new Set(byName.keys()),
    check(method, result) {
      const schema = byName.get(method);
      if (!schema) return { problem: `no method ${method} in the vendored execution-apis files`, additions: [] };
      let v = compiled.get(method);
      if (!v) {
        v = { strict: strict.compile(schema), lenient: lenient.compile(schema) };
        compiled.set(method, v);
      }
      if (v.strict(result) || onlyAmbiguousOneOf(result, v.strict.errors as AjvError[] | null))
        return { additions: [] };
      const gaps = NODE_GAPS[method] ?? [];
      const isGap = (e: Ajv.ErrorObject) =>
        e.keyword === 'required' && gaps.includes(String((e.params as { missingProperty?: string }).missingProperty));
      if (!v.lenient(result) && !(v.lenient.errors ?? []).every(isGap)) {
        return {
          problem: lenient.errorsText(
            (v.lenient.errors ?? []).filter((e) => !isGap(e)),
            { dataVar: 'result' },
          ),
          additions: [],
        };
      }
      const additions = (v.strict.errors ?? [])
        .filter((e) => e.keyword === 'additionalProperties')
        .map((e) => String((e.params as { additionalProperty: string }).additionalProperty));
      const missing = (v.strict.errors ?? [])
        .filter(isGap)
        .map((e) => `without ${String((e.params as { missingProperty?: string }).missingProperty)}`);
      return { additions: [...new Set([...additions, ...missing])] };
    },
  };
}
