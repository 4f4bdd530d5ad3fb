import type { Command } from './command.js';
import { migrateCommand } from './migrate.js';

/** Every `l2stack` sub-command, in the order `--help` lists them. */
export const COMMANDS: Command[] = [migrateCommand];
