import { describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import { loadRpcSpec } from '../../src/rpc/spec.js';
import { checkParamRules } from '../../src/rpc/params/rules.js';

interface ExamplePairing {
  name: string;
  params: { name: string; value: unknown }[];
  result: { name: string; value: unknown };
}

describe('rpc.openrpc.json examples', () => {
  it('behavior: every method has an example pairing whose params and result the spec itself accepts', async () => {
    const spec = await loadRpcSpec();
    const ajv = new Ajv();
    const problems: string[] = [];
    for (const method of spec.dereferenced.methods) {
      const examples = (method as unknown as { examples?: ExamplePairing[] }).examples ?? [];
      if (examples.length === 0) problems.push(`${method.name}: no example`);
      for (const ex of examples) {
        const where = `${method.name} "${ex.name}"`;
        if (ex.params.length > method.params.length)
          problems.push(`${where}: ${ex.params.length} params, the method takes ${method.params.length}`);
        method.params.forEach((p, i) => {
          const given = ex.params[i];
          if (!given) {
            if (p.required) problems.push(`${where}: required param ${p.name} missing`);
            return;
          }
          if (given.name !== p.name)
            problems.push(`${where}: param ${i} is named ${given.name}, the spec says ${p.name}`);
          if (!ajv.validate(p.schema as object, given.value))
            problems.push(`${where}: param ${p.name}: ${ajv.errorsText()}`);
        });
        try {
          checkParamRules(
            method.name,
            method.params.map((p) => p.name),
            ex.params.map((p) => p.value),
          );
        } catch (err) {
          problems.push(`${where}: ${(err as Error).message}`);
        }
        if (!ajv.validate(method.result.schema as object, ex.result.value))
          problems.push(`${where}: result: ${ajv.errorsText()}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
