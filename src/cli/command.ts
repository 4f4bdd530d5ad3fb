import type { ParseArgsConfig } from 'node:util';

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
}

export interface Command {
  name: string;
  summary: string;
  /** Usage line after "l2stack <name>", e.g. "[service]". */
  usage?: string;
  options?: Options;
  /** Lines describing each option, shown by `l2stack <name> --help`. */
  optionHelp?: string[];
  maxPositionals?: number;
  /** Nested commands (`l2stack devnet send-message`), chosen by the first argument. */
  subcommands?: Command[];
  /** Resolves to the exit code; long-running commands resolve when they stop. */
  run(args: ParsedArgs): Promise<number>;
}

/**
 * A top-level command's code, loaded only when that command runs: its name and summary live in the
 * registry (commands.ts), which `--help` reads without importing any command module.
 */
export type CommandBody = Omit<Command, 'name' | 'summary'>;

/** Thrown for bad command-line input: the CLI prints the message and the usage, and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
