// ESM-only dependencies: Node 20 requires them natively, jest's module runtime does not, so they are
// compiled to CommonJS (cookie via fastify's inject → light-my-request; content-disposition via
// @fastify/swagger-ui → @fastify/static).
const ESM_ONLY = ['cookie', 'content-disposition'];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } },
    ],
    [`/node_modules/(${ESM_ONLY.join('|')})/.+\\.js$`]: [
      '@swc/jest',
      { jsc: { target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  // nodenext: a dynamic import() of a relative TypeScript module names it with .js
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1', '^tg-relay$': '<rootDir>/index.ts' },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
