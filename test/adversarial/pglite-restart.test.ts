import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Wallet, parseEther } from 'ethers';
import { startDevnet, type Devnet } from '../../src/devnet/devnet.js';
import { reservePort } from '../../src/devnet/anvil.js';
import { ROLES } from '../../src/devnet/accounts.js';
import { createProvider } from '../../src/common/chain/provider.js';
import type { DbClient } from '../../src/common/db/client.js';
import { L1MessageService__factory } from '../../generated/contracts/types/index.js';
import { relayerEnv, testCommon } from '../e2e/relayer/harness.js';
import { mined } from '../../src/common/chain/mined.js';
import { l2stackArgs } from '../helpers/l2stack.js';
import { waitFor } from '../helpers/chain.js';

/**
 * Issue 18, recipe 9: `l2stack relayer` without DATABASE_HOST used to keep everything in memory, so a
 * restart forgot every message. Now its embedded database lives in `.l2stack/pglite/relayer` under the
 * working directory: a stored message survives a restart (clean or SIGKILL), and a second process on the
 * same directory is refused naming the directory and the holder. The processes get no DATABASE_* at all,
 * so this runs on PGlite whatever database the suite uses.
 */
const cwd = mkdtempSync(join(tmpdir(), 'l2s-restart-'));
const dbDir = join(cwd, '.l2stack', 'pglite', 'relayer');
let devnet: Devnet;
let env: Record<string, string>;
const common = testCommon();

interface Relayer {
  child: ChildProcess;
  url: string;
  out: () => string;
  exited: Promise<number | null>;
}

/** `fromGenesis`: the first run reads L1 from block 0; later runs would start at the head without a stored cursor. */
async function startRelayer(fromGenesis = false): Promise<Relayer> {
  const port = await reservePort('127.0.0.1', 0, 'relayer API');
  const own = { ...env, API_PORT: String(port), ...(fromGenesis ? { L1_LISTENER_INITIAL_FROM_BLOCK: '0' } : {}) };
  const child = spawn(process.execPath, l2stackArgs('relayer'), { cwd, env: own, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, url: `http://127.0.0.1:${port}`, out: () => out, exited };
}

const until = (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 45_000) =>
  waitFor(what, check, timeoutMs);

/** The relayer's record of the L1→L2 message `hash` (undefined while it has none or is not answering). */
async function stored(r: Relayer, hash: string): Promise<{ messageHash: string; status: string } | undefined> {
  if (r.child.exitCode !== null)
    throw new Error(`l2stack relayer exited with ${r.child.exitCode}:\n${r.out().slice(-3_000)}`);
  const res = await fetch(`${r.url}/messages/${hash}?direction=L1_TO_L2`).catch(() => undefined);
  return res?.ok ? ((await res.json()) as { messageHash: string; status: string }) : undefined;
}

beforeAll(async () => {
  if (process.env.DATABASE_HOST) return; // skipped there (below)
  // No coordinator, so no database here: the message stays SENT, which is all a restart needs to keep.
  const noDb = new Promise<DbClient>(() => undefined);
  devnet = await startDevnet({ common, db: noDb, options: { historyHours: 0, coordinator: false, blockTimeMs: 500 } });
  const relayerKey = devnet.state.accounts[ROLES.relayer]!.privateKey;
  env = {
    PATH: process.env.PATH ?? '',
    ...relayerEnv({ devnet, relayerKey }, { LOG_LEVEL: 'info', L2_L1_AUTO_CLAIM_ENABLED: 'false' }),
  };
}, 120_000);

afterAll(async () => {
  await devnet?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

// The processes run on PGlite whatever database the suite uses, so the Postgres pass of CI skips this copy.
describe.skipIf(Boolean(process.env.DATABASE_HOST))('embedded database on disk', () => {
  it(
    'behavior: a relayer message survives restarts (SIGTERM and SIGKILL); a second process on the directory is refused naming it and the holder',
    { timeout: 240_000 },
    async () => {
      const l1 = createProvider(devnet.state.l1.rpcUrl, devnet.state.l1.chainId, { pollingInterval: 50 });
      // The message may be sent before the first listener starts: that one reads from genesis.
      const first = await startRelayer(true);
      let hash: string;
      try {
        const sender = new Wallet(devnet.state.accounts[11]!.privateKey, l1);
        const service = L1MessageService__factory.connect(devnet.state.l1.messageService, sender);
        const fee = parseEther('0.01');
        const receipt = await mined(service.sendMessage(Wallet.createRandom().address, fee, '0x', { value: fee + 1n }));
        hash = String(
          receipt!.logs.map((l) => service.interface.parseLog(l)).find((p) => p?.name === 'MessageSent')!.args
            ._messageHash,
        ).toLowerCase();
        await until(
          'the first relayer to store the message',
          async () => (await stored(first, hash)) !== undefined,
        ).catch((err: Error) => {
          throw new Error(`${err.message}\n${first.out().slice(-3_000)}`);
        });
        expect(first.out()).toContain(`embedded PGlite in ${dbDir}`);

        // A second process on the same directory would corrupt it: refused before it opens anything.
        // Bounded: a second process that is not refused would otherwise hold the test to its limit, and is stopped.
        const second = await startRelayer();
        try {
          const code = await Promise.race([
            second.exited,
            new Promise<'running'>((r) => setTimeout(() => r('running'), 45_000)),
          ]);
          expect(code, `the second process was not refused:\n${second.out().slice(-2_000)}`).toBe(1);
        } finally {
          second.child.kill('SIGKILL');
        }
        expect(second.out()).toContain(
          `the embedded database directory ${dbDir} is in use by process ${first.child.pid}`,
        );
        expect(await stored(first, hash)).toMatchObject({ messageHash: hash });

        first.child.kill('SIGTERM');
        expect(await first.exited).toBe(0);
        expect(existsSync(join(dbDir, 'l2stack.lock'))).toBe(false);
      } finally {
        first.child.kill('SIGKILL');
      }

      // A clean restart, then a crash: the crashed process's lock is taken over by the next one. A restarted
      // listener without its stored cursor would start at the head, past the message: only the disk has it.
      for (const stop of ['SIGKILL', 'SIGTERM'] as const) {
        const next = await startRelayer();
        try {
          await until(
            'the restarted relayer to answer with the message',
            async () => (await stored(next, hash)) !== undefined,
          );
          expect(await stored(next, hash)).toMatchObject({ messageHash: hash, status: expect.any(String) });
          await until('the listener to resume from its stored cursor', () =>
            /"resumed":true[^\n]*listener starting/.test(next.out()),
          );
          next.child.kill(stop);
          expect(await next.exited).toBe(stop === 'SIGTERM' ? 0 : null);
        } finally {
          next.child.kill('SIGKILL');
        }
      }
      l1.destroy();
    },
  );
});
