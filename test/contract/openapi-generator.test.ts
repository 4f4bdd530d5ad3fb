import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateClient, generatorVersion, javaMissing, root } from '../clients/generate.js';
import { CLIENTS_DOC, writeSnippets } from '../clients/snippets.js';

/**
 * Integrators generate their own clients from our specs with openapi-generator. The only generator JAR
 * reachable offline is the one shipped inside an npm package, which reads OpenAPI 3.0 — one reason our
 * specs stay on 3.0.3. Each spec must generate without errors, and the client must compile under
 * `--strict`, together with the TypeScript snippets of docs/clients.md that use it. The same generation
 * (cached per spec, test/clients/generate.ts) is what test/clients drives against running servers.
 */
// A generation is a JVM start plus seconds of work: minutes on a loaded CI machine.
const GENERATION_TIMEOUT = 300_000;
if (javaMissing) console.warn(`openapi-generator conformance skipped: ${javaMissing}`);

const CLIENTS = [
  { spec: 'token-api.openapi.yaml', link: 'token-api-client', snippet: 'token-client-snippets.ts' },
  { spec: 'relayer-api.openapi.yaml', link: 'relayer-api-client', snippet: 'relayer-client-snippets.ts' },
];

describe.skipIf(javaMissing !== undefined)('openapi-generator clients', () => {
  it(
    'behavior: the docs name the generator version the JAR reports, and no other',
    () => {
      const version = generatorVersion();
      expect(version).toMatch(/^\d+\.\d+\.\d+/);
      expect(readFileSync(CLIENTS_DOC, 'utf8')).toContain(`openapi-generator ${version}`);
      const docs = [
        'README.md',
        'CONTRIBUTING.md',
        ...readdirSync(join(root, 'docs'))
          .filter((f) => f.endsWith('.md'))
          .map((f) => `docs/${f}`),
      ];
      const named = docs.flatMap((f) =>
        [...readFileSync(join(root, f), 'utf8').matchAll(/openapi-generator (\d+\.\d+\.\d+[\w.-]*)/g)].map(
          (m) => `${f}: ${m[1]}`,
        ),
      );
      expect(named.filter((n) => !n.endsWith(`: ${version}`))).toEqual([]);
    },
    GENERATION_TIMEOUT,
  );

  for (const { spec, link, snippet } of CLIENTS) {
    it(
      `behavior: a typescript-fetch client generated from ${spec} compiles, with the snippet ${snippet} of docs/clients.md`,
      () => {
        const { dir } = generateClient(spec, 'typescript-fetch', { typescriptThreePlus: 'true' });
        expect(readdirSync(join(dir, 'apis')).length).toBeGreaterThan(0);
        const snippets = writeSnippets({ [link]: dir });
        const tsc = spawnSync(
          process.execPath,
          [
            join(root, 'node_modules/typescript/bin/tsc'),
            '--strict',
            '--noEmit',
            '--skipLibCheck',
            '--target',
            'es2020',
            '--lib',
            'es2020,dom',
            '--moduleResolution',
            'node',
            '--module',
            'commonjs',
            join(dir, 'index.ts'),
            join(snippets, snippet),
          ],
          { encoding: 'utf8', timeout: 120_000 },
        );
        expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);
      },
      GENERATION_TIMEOUT,
    );
  }
});
