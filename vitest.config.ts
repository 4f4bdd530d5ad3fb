import { defineConfig } from 'vitest/config';

// Real chains and databases: generous timeouts (a CI run on a loaded 2-core machine took a 60 s test past
// 60 s, four times in one run at load ~24), and at most two files at once (2 cores).
const shared = { testTimeout: 180_000, hookTimeout: 180_000 };

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { ...shared, name: 'unit', include: ['test/**/*.test.ts'], exclude: ['test/e2e/**', 'test/bench/**', 'node_modules/**'] },
      },
      {
        extends: true,
        // One devnet (two anvil chains, contracts, history, coordinator) shared by every e2e file.
        test: { ...shared, name: 'e2e', include: ['test/e2e/**/*.test.ts'], globalSetup: ['test/e2e/global-setup.ts'] },
      },
    ],
  },
});
