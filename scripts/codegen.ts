/**
 * `npm run codegen`: runs every target of codegen.config.json into generated/.
 * `npm run codegen -- --check`: runs them into a temporary directory and fails on any difference, so a
 * spec or contract change without regenerated code (or a hand edit of generated/) cannot land.
 * .env.example and the variable tables of the docs (<!-- generated:env … --> blocks), outside generated/, are
 * written (and checked) from the services' variable declarations.
 */
import { readFile, mkdtemp, rm, readdir, cp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { openapiTypes, openapiFetchClient } from './codegen/openapi.js';
import { openrpcTypings, openrpcClient } from './codegen/openrpc.js';
import { solidity, typechain } from './codegen/solidity.js';
import { abiModules } from './codegen/abi.js';
import { envExample } from './codegen/env-example.js';
import { docTables } from './codegen/doc-tables.js';
import type { Generator, Target } from './codegen/types.js';

const GENERATORS: Record<string, Generator> = {
  'openapi-typescript': openapiTypes,
  'openapi-fetch-client': openapiFetchClient,
  'openrpc-typings': openrpcTypings,
  'openrpc-client': openrpcClient,
  solc: solidity,
  typechain,
  'abi-modules': abiModules,
};

const root = join(import.meta.dirname, '..');

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) await walk(join(d, e.name));
      else out.push(relative(dir, join(d, e.name)));
    }
  };
  await walk(dir);
  return out.sort();
}

async function runAll(outRoot: string): Promise<void> {
  const config = JSON.parse(await readFile(join(root, 'codegen.config.json'), 'utf8')) as { targets: Target[] };
  for (const target of config.targets) {
    const generator = GENERATORS[target.generator];
    if (!generator)
      throw new Error(`codegen.config.json: target "${target.name}" uses unknown generator "${target.generator}"`);
    const started = Date.now();
    await generator(target, { root, outRoot });
    process.stdout.write(
      `codegen: ${target.name} -> ${relative(root, join(outRoot, target.output))} (${Date.now() - started} ms)\n`,
    );
  }
}

async function main(): Promise<number> {
  const check = process.argv.includes('--check');
  const generated = join(root, 'generated');
  const tmp = await mkdtemp(join(tmpdir(), 'l2stack-codegen-'));
  try {
    await runAll(tmp);
    const envFile = join(root, '.env.example');
    if (!check) {
      await rm(generated, { recursive: true, force: true });
      await cp(tmp, generated, { recursive: true });
      await writeFile(envFile, envExample());
      for (const [path, want] of await docTables(root)) await writeFile(join(root, path), want);
      return 0;
    }
    const [want, have] = await Promise.all([listFiles(tmp), listFiles(generated)]);
    const problems: string[] = [];
    for (const f of want.filter((f) => !have.includes(f))) problems.push(`missing: generated/${f}`);
    for (const f of have.filter((f) => !want.includes(f))) problems.push(`unexpected: generated/${f}`);
    for (const f of want.filter((f) => have.includes(f))) {
      const [a, b] = await Promise.all([readFile(join(tmp, f)), readFile(join(generated, f))]);
      if (!a.equals(b)) problems.push(`differs: generated/${f}`);
    }
    if ((await readFile(envFile, 'utf8').catch(() => '')) !== envExample()) problems.push('differs: .env.example');
    for (const [path] of await docTables(root)) problems.push(`differs: ${path} (a generated:env table)`);
    if (problems.length > 0) {
      process.stderr.write(
        `codegen:check: generated files (generated/, .env.example, the docs' variable tables) are out of date with specs/ and src/*/config.ts (run npm run codegen):\n  ${problems.join('\n  ')}\n`,
      );
      return 1;
    }
    process.stdout.write(
      `codegen:check: generated/, .env.example and the docs' variable tables match (${want.length + 1} files)\n`,
    );
    return 0;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`codegen failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  },
);
