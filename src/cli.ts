import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import type { Command } from './cli/command.js';
import { UsageError } from './cli/command.js';
import { COMMANDS } from './cli/commands.js';

function packageVersion(): string {
  const pkg = JSON.parse(
    readFileSync(
      new URL(import.meta.url.includes('/dist/') ? '../../package.json' : '../package.json', import.meta.url),
      'utf8',
    ),
  ) as { version: string };
  return pkg.version;
}

function mainUsage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'Usage: l2stack <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Options:',
    '  -h, --help     show help (also: l2stack <command> --help)',
    '  -v, --version  print the version',
    '',
    'Configuration comes from environment variables; see .env.example.',
  ].join('\n');
}

function commandUsage(c: Command): string {
  const lines = [
    `Usage: l2stack ${c.name}${c.options && Object.keys(c.options).length ? ' [options]' : ''}${c.usage ? ` ${c.usage}` : ''}`,
    '',
    c.summary,
  ];
  if (c.optionHelp?.length) lines.push('', ...c.optionHelp.map((l) => `  ${l}`));
  if (c.subcommands?.length)
    lines.push('', 'Subcommands:', ...c.subcommands.map((s) => `  ${c.name} ${s.name}  ${s.summary}`));
  return lines.join('\n');
}

/** Runs the CLI; returns the exit code (2 for usage errors, as is customary). */
export async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    process.stdout.write(`${mainUsage()}\n`);
    return first === undefined ? 2 : 0;
  }
  if (first === '-v' || first === '--version') {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  const entry = COMMANDS.find((c) => c.name === first);
  if (!entry) {
    process.stderr.write(`l2stack: unknown command "${first}"\n\n${mainUsage()}\n`);
    return 2;
  }
  let command: Command = { name: entry.name, summary: entry.summary, ...(await entry.load()) };
  // Nested commands to any depth: `l2stack rpc keys create`.
  for (
    let sub = command.subcommands?.find((c) => c.name === rest[0]);
    sub;
    sub = command.subcommands?.find((c) => c.name === rest[0])
  ) {
    command = { ...sub, name: `${command.name} ${sub.name}` };
    rest.shift();
  }
  let args;
  try {
    args = parseArgs({
      args: rest,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    if (args.values.help) {
      process.stdout.write(`${commandUsage(command)}\n`);
      return 0;
    }
    const max = command.maxPositionals ?? 0;
    if (args.positionals.length > max) throw new UsageError(`unexpected argument "${args.positionals[max]}"`);
    return await command.run(args);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (err instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`l2stack ${command.name}: ${(err as Error).message}\n\n${commandUsage(command)}\n`);
      return 2;
    }
    throw err;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`l2stack: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
