import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  // test/types: fixtures that must fail to compile (test/contract/typed-handlers.test.ts).
  { ignores: ['generated/**', 'dist/**', 'node_modules/**', 'reports/**', '.l2stack/**', 'test/types/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node }, ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
      // process.env is read only in src/common/config/process-env.ts (CONTRIBUTING.md, "Style").
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'read the environment through src/common/config only' }],
    },
  },
  {
    files: ['src/common/config/process-env.ts', 'test/**', 'scripts/**', 'vitest.config.ts', 'bin/**'],
    rules: { 'no-restricted-properties': 'off', 'no-console': 'off' },
  },
);
