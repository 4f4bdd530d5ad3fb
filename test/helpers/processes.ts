import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';

/**
 * Processes carrying a marker environment variable. A command started with the marker passes it to every
 * child (anvil included), so "nothing left running" is checked exactly, even while other tests run anvils.
 */
export function newMarker(): { name: string; value: string } {
  return { name: 'L2STACK_TEST_MARKER', value: randomBytes(8).toString('hex') };
}

export function processesWithMarker(marker: { name: string; value: string }): number[] {
  const needle = `${marker.name}=${marker.value}`;
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(needle)) found.push(Number(entry));
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return found;
}
