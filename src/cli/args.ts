import { UsageError, type Options } from './command.js';

/** Flag parsers that name the flag in their error, so `--l1-port abc` says exactly what is wrong. */
export function portFlag(name: string, raw: unknown, fallback: number): number {
  if (raw === undefined) return fallback;
  const s = String(raw);
  if (!/^\d+$/.test(s) || Number(s) > 65535)
    throw new UsageError(`--${name} must be a port number 0..65535, got "${s}"`);
  return Number(s);
}

export function intFlag(name: string, raw: unknown, fallback: number, min = 0): number {
  if (raw === undefined) return fallback;
  const s = String(raw);
  if (!/^\d+$/.test(s) || Number(s) < min) throw new UsageError(`--${name} must be an integer >= ${min}, got "${s}"`);
  return Number(s);
}

export function stringFlag(raw: unknown): string | undefined {
  return typeof raw === 'string' ? raw : undefined;
}

/** Options that each take a value (`--name VALUE`), by name. */
export const stringOptions = (...names: string[]): Options =>
  Object.fromEntries(names.map((name) => [name, { type: 'string' as const }]));
