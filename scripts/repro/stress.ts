/**
 * Runs tests again and again beside busy loops, to make a rare failure (a flake) show itself, and prints how many
 * runs failed (issue 37: reproduce a flake on purpose before changing its test). Usage:
 *
 *   npx tsx scripts/repro/stress.ts [--runs N=10] [--hogs K=2] [--timeout S=300] [--node DIR] -- <vitest arguments>
 *   npx tsx scripts/repro/stress.ts --runs 20 --node /tmp/node24/bin -- test/rpc/ws.test.ts -t "burst"
 *
 * --hogs starts K processes that spin on a core each for the whole session (the load of CI's three files at once on
 * two cores); --node puts that directory first on PATH, so the tests run on another Node (CI's PGlite pass runs on 24).
 * Each run is bounded by --timeout seconds (a hang counts as a failure). A failed run's output is kept in a file whose
 * name is printed; the last line is "N runs, P passed, F failed".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function parse(argv: string[]) {
  const split = argv.indexOf('--');
  if (split < 0 || split === argv.length - 1) usage('give the vitest arguments after --');
  const own = argv.slice(0, split);
  const flags = { runs: 10, hogs: 2, timeout: 300, node: undefined as string | undefined };
  for (let i = 0; i < own.length; i += 2) {
    const [name, value] = [own[i]!, own[i + 1]];
    if (value === undefined) usage(`${name} needs a value`);
    if (name === '--node') flags.node = value;
    else if (name === '--runs' || name === '--hogs' || name === '--timeout') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < (name === '--hogs' ? 0 : 1))
        usage(`${name} must be a whole number, got "${value}"`);
      flags[name.slice(2) as 'runs' | 'hogs' | 'timeout'] = n;
    } else usage(`unknown flag ${name}`);
  }
  return { ...flags, vitest: argv.slice(split + 1) };
}

function usage(problem: string): never {
  process.stderr.write(
    `stress: ${problem}\nusage: npx tsx scripts/repro/stress.ts [--runs N] [--hogs K] [--timeout S] [--node DIR] -- <vitest arguments>\n`,
  );
  process.exit(2);
}

/** One vitest run: whether it passed, and everything it printed. */
function runOnce(args: string[], env: NodeJS.ProcessEnv, timeoutS: number): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npx', ['vitest', 'run', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => {
      output += `\nstress: no end within ${timeoutS} s; killed\n`;
      process.kill(-child.pid!, 'SIGKILL');
    }, timeoutS * 1_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ ok: code === 0, output });
    });
  });
}

const o = parse(process.argv.slice(2));
const env = { ...process.env, ...(o.node ? { PATH: `${o.node}:${process.env.PATH ?? ''}` } : {}) };
const hogs: ChildProcess[] = Array.from({ length: o.hogs }, () =>
  spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
);
const stopHogs = () => hogs.forEach((h) => h.kill('SIGKILL'));
process.on('exit', stopHogs);
process.on('SIGINT', () => process.exit(130));

const dir = mkdtempSync(join(tmpdir(), 'l2stack-stress-'));
let failed = 0;
for (let run = 1; run <= o.runs; run++) {
  const started = Date.now();
  const { ok, output } = await runOnce(o.vitest, env, o.timeout);
  const seconds = ((Date.now() - started) / 1_000).toFixed(1);
  if (ok) process.stdout.write(`run ${run}: passed (${seconds} s)\n`);
  else {
    failed++;
    const file = join(dir, `run-${run}.log`);
    writeFileSync(file, output);
    process.stdout.write(`run ${run}: FAILED (${seconds} s), output in ${file}\n`);
  }
}
stopHogs();
process.stdout.write(
  `${o.runs} runs, ${o.runs - failed} passed, ${failed} failed (${o.hogs} busy loops${o.node ? `, PATH from ${o.node}` : ''})\n`,
);
process.exit(failed === 0 ? 0 : 1);
