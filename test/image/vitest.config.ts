import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The container image tests (issue 25 item 5): .ci/run's image step runs
//   L2STACK_IMAGE_TESTS=required npx vitest run --config test/image/vitest.config.ts
// (`npm test` collects the file too, and skips it without L2STACK_IMAGE_TESTS). Builds take minutes on a cold
// machine, and the files share the machine's podman storage and ports: one file at a time, long limits (each
// podman call has a tighter one of its own).
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('../..', import.meta.url)),
    include: ['test/image/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
});
