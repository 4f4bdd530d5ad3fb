/**
 * `npm run bench -- <area> [more areas]`: runs test/bench/<area>.ts. Each benchmark measures its own
 * baseline in the same run and prints ratios (the machine is noisy; absolute numbers mean little).
 */
import { readdirSync } from 'node:fs';

const available = readdirSync(new URL('.', import.meta.url))
  .filter((f) => f.endsWith('.ts') && !['run.ts'].includes(f) && !f.startsWith('_'))
  .map((f) => f.replace(/\.ts$/, ''))
  .sort();

const requested = process.argv.slice(2).filter((a) => a !== '--');
if (requested.length === 0 || requested.some((r) => !available.includes(r))) {
  const bad = requested.filter((r) => !available.includes(r));
  if (bad.length > 0) console.error(`unknown benchmark: ${bad.join(', ')}`);
  console.error(`usage: npm run bench -- <${available.join('|') || 'none yet'}>`);
  process.exit(2);
}
for (const area of requested) {
  console.log(`\n# bench: ${area}`);
  const mod = (await import(`./${area}.ts`)) as { main: () => Promise<void> };
  await mod.main();
}
