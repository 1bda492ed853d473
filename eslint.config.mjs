// ESLint with typescript-eslint's type-checked recommended rules; Prettier owns formatting.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/', 'sdk/dist/', 'coverage/', 'data/', 'node_modules/', 'generated/', 'console/dist/'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A leading underscore marks a binding kept on purpose (a field dropped by a rest destructuring,
      // a parameter a signature requires); the rest siblings of a destructuring are what it is for.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
    },
  },
  {
    // The SDK's unit tests are type-checked by sdk/tsconfig.test.json, which no tsconfig.json names.
    files: ['sdk/test/*.ts'],
    languageOptions: {
      parserOptions: { projectService: false, project: ['./sdk/tsconfig.test.json'] },
    },
  },
  {
    // The console runs in a browser (docs/console.md).
    files: ['console/src/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    // Plain JavaScript (scripts, examples, config files) has no types to check against.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    // CommonJS files load their dependencies with require() by definition.
    files: ['**/*.cjs'],
    languageOptions: { globals: { ...globals.commonjs } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // supertest's `res.body` is `any` by design: every assertion on it would need a cast that proves nothing.
    files: ['test/**/*.ts', 'sdk/test/**/*.ts', 'console/test/**/*.ts', '**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // The same untyped JSON bodies, named: Record<string, any> says "a response body", nothing more.
      '@typescript-eslint/no-explicit-any': 'off',
      // Test doubles implement Promise-returning interfaces without anything to await.
      '@typescript-eslint/require-await': 'off',
    },
  },
  prettier,
);
