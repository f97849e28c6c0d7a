// ESLint (flat config) over the whole project: sources, tests, benches and the dashboard's browser
// code, with typescript-eslint's type-aware rules (each file is checked against the tsconfig that
// owns it: tsconfig.json, or libs/admin/ui/tsconfig.json for libs/admin/ui/src).
// `npm run lint`. An exception to a rule is a line-level disable with the reason next to it.
import js from '@eslint/js';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.data/', '.test-data/', 'libs/admin/ui/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
      globals: { ...globals.node },
    },
    plugins: { 'import-x': importX },
    settings: {
      // import-x follows TypeScript files (parsed by typescript-eslint) through Node's resolution
      'import-x/extensions': ['.ts', '.cts', '.mts', '.js', '.cjs', '.mjs'],
      'import-x/external-module-folders': ['node_modules', 'node_modules/@types'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.cts', '.mts'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'] })],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    // Tests and benchmarks assert on database rows (pg types them `any`) and on JSON answers of real
    // HTTP servers; they read fields of those rows at about 1,100 places. A cast at each would add
    // noise, not safety: a wrong field fails the assertion anyway. The product code keeps these rules.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
  {
    files: ['libs/admin/ui/src/**/*.ts'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    // plain JavaScript (bin, scripts, jest config and reporter, CommonJS fixtures): no type information
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'commonjs',
      globals: { ...globals.node },
    },
    rules: { ...tseslint.configs.disableTypeChecked.rules, '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module' },
  },
);
