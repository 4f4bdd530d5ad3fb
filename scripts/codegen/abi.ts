import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HEADER, type Generator } from './types.js';

/** A spec ABI's file name becomes part of TypeScript identifiers, so it must be one. */
const NAME = /^[A-Z][A-Za-z0-9]*$/;
/** Bounds what one spec may hold: a runaway or wrong file fails codegen instead of emitting megabytes. */
const MAX_SPEC_BYTES = 256 * 1024;

interface AbiItem {
  type?: unknown;
  name?: unknown;
}

async function readSpec(file: string, name: string): Promise<AbiItem[]> {
  const text = await readFile(file, 'utf8');
  if (text.length > MAX_SPEC_BYTES)
    throw new Error(`specs/abi/${name}.json: ${text.length} bytes is more than the ${MAX_SPEC_BYTES}-byte limit`);
  const abi = JSON.parse(text) as unknown;
  if (!Array.isArray(abi) || abi.length === 0)
    throw new Error(`specs/abi/${name}.json: expected a non-empty JSON array of ABI items`);
  for (const [i, item] of (abi as AbiItem[]).entries()) {
    if (!['function', 'event', 'error', 'constructor', 'fallback', 'receive'].includes(String(item?.type))) {
      throw new Error(`specs/abi/${name}.json: item ${i} has no valid "type" (got ${JSON.stringify(item?.type)})`);
    }
  }
  return abi as AbiItem[];
}

/**
 * specs/abi/*.json → one module per contract: the ABI as a `const` literal (`<Name>Abi`, viem-style, so
 * tools that infer types from ABIs can use it) and an ethers `Interface` over it (`<Name>Interface`),
 * built once when the module loads, so callers share it instead of parsing fragments per message.
 * The spec JSON is the only place an ABI is written; src/ imports these modules.
 */
export const abiModules: Generator = async (target, { root, outRoot }) => {
  const inputDir = join(root, target.input);
  const names = (await readdir(inputDir))
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort();
  if (names.length === 0) throw new Error(`${target.input}: no *.json ABI files`);
  const outDir = join(outRoot, target.output);
  await mkdir(outDir, { recursive: true });
  for (const name of names) {
    if (!NAME.test(name))
      throw new Error(`${target.input}/${name}.json: the file name must be a PascalCase identifier (${NAME.source})`);
    const abi = await readSpec(join(inputDir, `${name}.json`), name);
    const body = `${HEADER}import { Interface } from 'ethers';

/** The ABI of ${target.input}/${name}.json, as a literal type. */
export const ${name}Abi = ${JSON.stringify(abi, null, 2)} as const;

/** An ethers Interface over {@link ${name}Abi}, built once at module load. */
export const ${name}Interface = new Interface(${name}Abi);
`;
    await writeFile(join(outDir, `${name}.ts`), body);
  }
  const index = names.map((n) => `export { ${n}Abi, ${n}Interface } from './${n}.js';\n`).join('');
  await writeFile(join(outDir, 'index.ts'), HEADER + index);
};
