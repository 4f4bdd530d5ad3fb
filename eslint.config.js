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
      // Prettier (npm run format) keeps code to 120 columns but leaves comments alone: they are held to it here.
      // Strings, templates and patterns stay whole, so a message can be found by searching for it.
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
      'no-console': 'error',
      // process.env is read only in src/common/config/process-env.ts (CONTRIBUTING.md, "Style").
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'read the environment through src/common/config only' },
      ],
    },
  },
  {
    // The driver is held only by the query wrapper (src/common/db/queries.ts): every query labelled, timed,
    // its errors mapped (CONTRIBUTING.md, "Style").
    files: ['src/**/*.ts'],
    ignores: ['src/common/db/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[property.name='knex']",
          message: 'reach the database through db.query(label, fn) / db.transaction(label, fn), not db.knex',
        },
      ],
    },
  },
  {
    files: ['src/common/config/process-env.ts', 'test/**', 'scripts/**', 'vitest.config.ts', 'bin/**'],
    rules: { 'no-restricted-properties': 'off', 'no-console': 'off' },
  },
);
