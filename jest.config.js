// Jest runs in CommonJS mode; test/utils/jest-transform.cjs explains why and compiles with swc.
const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.(ts|js|mjs)$': '<rootDir>/test/utils/jest-transform.cjs' },
  transformIgnorePatterns: [],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};

export default {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
    { ...common, displayName: 'sdk', testMatch: ['<rootDir>/sdk/test/**/*.test.ts'] },
    // Suites that need MariaDB and Redis (npm run test:services); npm test leaves them out.
    { ...common, displayName: 'services', testMatch: ['<rootDir>/test/services/**/*.services-spec.ts'] },
  ],
  testTimeout: 30000,
};
