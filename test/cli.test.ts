import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../src/cli/commands.js';
import { runL2stack } from './helpers/l2stack.js';

const run = (...args: string[]) => runL2stack(args, { timeout: 30_000 });

describe('l2stack CLI', () => {
  it('behavior: --help lists the commands and exits 0', () => {
    const r = run('--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Usage: l2stack <command>');
    expect(r.stdout).toMatch(/^\s+migrate\s+apply database migrations/m);
  });

  it('behavior: --version prints the package version', () => {
    const r = run('--version');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it("behavior: a command's --help shows the summary the command list gives it", () => {
    const r = run('relayer', '--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`Usage: l2stack relayer\n\n${COMMANDS.find((c) => c.name === 'relayer')!.summary}`);
  });

  it('error: an unknown flag exits 2 with the usage', () => {
    const r = run('migrate', '--bogus');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("Unknown option '--bogus'");
    expect(r.stderr).toContain('Usage: l2stack migrate');
  });

  it('error: an unknown command exits 2 naming it', () => {
    const r = run('frobnicate');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown command "frobnicate"');
  });

  it('behavior: migrate takes several services and migrates each (in one database when DATABASE_PGLITE_DIR names it)', () => {
    const r = runL2stack(['migrate', 'relayer', 'rpc'], {
      env: { ...process.env, DATABASE_HOST: '', DATABASE_PGLITE_DIR: 'memory://', LOG_LEVEL: 'info' },
    });
    expect(r.status, r.stderr).toBe(0);
    const migrated = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { service?: string }).service)
      .filter(Boolean);
    expect(migrated).toEqual(['relayer', 'rpc']);
  });

  it('error: migrate of an unknown service exits 2 naming it', () => {
    const r = run('migrate', 'nosuch');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown service "nosuch"');
  });
});
