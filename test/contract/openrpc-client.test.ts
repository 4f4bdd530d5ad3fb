import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The TypeScript client @open-rpc/generator makes from specs/rpc.openrpc.json (generated/rpc/client) is what
 * an integrator gets from our spec: it must compile. Its package pins TypeScript 4.2, which cannot read
 * current @types packages, so it is compiled here with our TypeScript and skipLibCheck, as documented.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));

describe('OpenRPC generated client', () => {
  it('behavior: generated/rpc/client compiles', () => {
    const dir = mkdtempSync(join(tmpdir(), 'l2stack-rpc-client-'));
    try {
      cpSync(join(root, 'generated/rpc/client'), dir, { recursive: true });
      symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
      const tsc = spawnSync(
        process.execPath,
        [
          join(root, 'node_modules/typescript/bin/tsc'),
          '-p',
          dir,
          '--noEmit',
          '--skipLibCheck',
          '--noImplicitAny',
          'false',
          '--lib',
          'es2020,dom',
        ],
        { encoding: 'utf8', timeout: 120_000 },
      );
      expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
