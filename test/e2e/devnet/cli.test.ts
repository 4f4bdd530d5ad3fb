import { describe, expect, inject, it } from 'vitest';
import { createServer, type Server } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newMarker, processesWithMarker } from '../../helpers/processes.js';
import { runL2stack } from '../../helpers/l2stack.js';

/** `l2stack devnet` commands against the shared devnet; `l2stack dev` as a whole is test/e2e/devnet/dev.test.ts. */
const stateFile = inject('devnetStateFile');
const cli = (...args: string[]) => runL2stack(args);

const occupy = () =>
  new Promise<{ server: Server; port: number }>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () =>
      resolve({ server, port: (server.address() as { port: number }).port }),
    );
  });

describe('l2stack devnet send-message', () => {
  it('behavior: sends a message and prints its hash', () => {
    const r = cli(
      'devnet',
      'send-message',
      '--from',
      'l2',
      '--account',
      '11',
      '--value',
      '0.001',
      '--fee',
      '0',
      '--state-file',
      stateFile,
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it('error: a bad address exits 2 naming --to', () => {
    const r = cli('devnet', 'send-message', '--from', 'l1', '--to', '0xnothex', '--state-file', stateFile);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--to must be a 0x-prefixed 20-byte address, got "0xnothex"');
  });

  it('error: a negative value exits 2 naming --value', () => {
    const r = cli('devnet', 'send-message', '--from', 'l1', '--value=-1', '--state-file', stateFile);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--value must be a non-negative amount of ether');
  });

  it('error: a missing --from names the flag', () => {
    const r = cli('devnet', 'send-message', '--state-file', stateFile);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--from must be l1 or l2');
  });
});

describe('l2stack devnet start-up', () => {
  it('error: a port already in use fails start-up naming the port, leaving nothing running', async () => {
    const { server, port } = await occupy();
    const marker = newMarker();
    try {
      const r = runL2stack(
        ['devnet', '--l2-port', String(port), '--state-file', join(mkdtempSync(join(tmpdir(), 'l2s-')), 's.json')],
        {
          timeout: 120_000,
          env: { ...process.env, [marker.name]: marker.value, LOG_LEVEL: 'error', DATABASE_HOST: '' },
        },
      );
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`port ${port} on 127.0.0.1 is already in use`);
      expect(processesWithMarker(marker)).toEqual([]);
    } finally {
      server.close();
    }
  });
});
