import { readdir, readFile, mkdir, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import solc from 'solc';
import { runTypeChain } from 'typechain';
import type { Generator } from './types.js';

async function solidityFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) =>
      e.isDirectory()
        ? solidityFiles(join(dir, e.name))
        : Promise.resolve(e.name.endsWith('.sol') ? [join(dir, e.name)] : []),
    ),
  );
  return nested.flat().sort();
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
}

/**
 * Compiles the devnet Solidity with the bundled solc-js (offline). Source names are repository-relative
 * and the metadata hash is left out of the bytecode, so output is byte-identical on every machine.
 */
export const solidity: Generator = async (target, { root, outRoot }) => {
  const files = await solidityFiles(join(root, target.input));
  const sources: Record<string, { content: string }> = {};
  for (const f of files) sources[relative(root, f)] = { content: await readFile(f, 'utf8') };
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      optimizer: { enabled: true, runs: Number(target.options?.optimizerRuns ?? 200) },
      evmVersion: String(target.options?.evmVersion ?? 'cancun'),
      metadata: { bytecodeHash: 'none', appendCBOR: false },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };
  // Package imports (`@account-abstraction/...`, `@openzeppelin/...`) resolve from node_modules, keeping
  // their npm names as source names so the output does not depend on where the checkout lives.
  const findImports = (path: string) => {
    const full = [join(root, path), join(root, 'node_modules', path)].find((f) => existsSync(f));
    return full ? { contents: readFileSync(full, 'utf8') } : { error: `import not found: ${path}` };
  };
  // Optional allow-list: a target that compiles a package keeps only the contracts it deploys.
  const only = Array.isArray(target.options?.contracts) ? new Set(target.options.contracts as string[]) : undefined;
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports })) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`);

  const outDir = join(outRoot, target.output);
  await mkdir(outDir, { recursive: true });
  const seen = new Map<string, string>();
  for (const [sourceName, contracts] of Object.entries(output.contracts).sort(([a], [b]) => a.localeCompare(b))) {
    for (const [contractName, c] of Object.entries(contracts)) {
      const bytecode = c.evm.bytecode.object;
      if (c.abi.length === 0 && bytecode.length === 0) continue; // libraries of pure helpers, nothing to bind
      if (only && !only.has(contractName)) continue;
      if (seen.has(contractName))
        throw new Error(`contract name ${contractName} is used in ${seen.get(contractName)} and ${sourceName}`);
      seen.set(contractName, sourceName);
      const artifact = { contractName, sourceName, abi: c.abi, bytecode: bytecode ? `0x${bytecode}` : '0x' };
      await writeFile(join(outDir, `${contractName}.json`), `${JSON.stringify(artifact, null, 2)}\n`);
    }
  }
};

/** ethers-v6 bindings (contracts, factories with bytecode) from the artifacts written by `solidity`. */
export const typechain: Generator = async (target, { root, outRoot }) => {
  const inputDir = join(outRoot, target.input);
  const files = (await readdir(inputDir))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => join(inputDir, f));
  await runTypeChain({
    cwd: root,
    filesToProcess: files,
    allFiles: files,
    inputDir,
    outDir: join(outRoot, target.output),
    target: 'ethers-v6',
    flags: { alwaysGenerateOverloads: false, discriminateTypes: false, node16Modules: true, environment: undefined },
  });
};
