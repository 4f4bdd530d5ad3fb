import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateClient, javaMissing, root } from '../clients/generate.js';

/**
 * Integrators generate their own clients from our specs with openapi-generator. The only generator JAR
 * reachable offline is 4.3.1 (shipped inside an npm package), which reads OpenAPI 3.0 — one reason our
 * specs stay on 3.0.3. Each spec must generate without errors, and the client must compile under
 * `--strict`. The same generation (cached per spec, test/clients/generate.ts) is what test/clients drives
 * against running servers.
 */
// A generation is a JVM start plus seconds of work: minutes on a loaded CI machine.
const GENERATION_TIMEOUT = 300_000;
if (javaMissing) console.warn(`openapi-generator conformance skipped: ${javaMissing}`);

describe.skipIf(javaMissing !== undefined)('openapi-generator clients', () => {
  for (const spec of ['token-api.openapi.yaml', 'relayer-api.openapi.yaml']) {
    it(`behavior: a typescript-fetch client generated from ${spec} compiles`, () => {
      const { dir } = generateClient(spec, 'typescript-fetch', { typescriptThreePlus: 'true' });
      expect(readdirSync(join(dir, 'apis')).length).toBeGreaterThan(0);
      // The 4.3.1 runtime still names the long-gone GlobalFetch type; integrators add this one-line shim.
      writeFileSync(join(dir, 'shim.d.ts'), 'type GlobalFetch = WindowOrWorkerGlobalScope;\n');
      const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--strict', '--noEmit', '--skipLibCheck', '--target', 'es2020', '--lib', 'es2020,dom', '--moduleResolution', 'node', '--module', 'commonjs', join(dir, 'index.ts'), join(dir, 'shim.d.ts')], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);
    }, GENERATION_TIMEOUT);
  }
});
