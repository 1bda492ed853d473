// Jest runs in CommonJS mode; test/utils/jest-transform.cjs explains why and compiles with swc.
const common = {
  // Node's environment, releasing what a test file registered with Node itself (the file says why).
  testEnvironment: '<rootDir>/test/utils/jest-environment.cjs',
  transform: { '^.+\\.(ts|js|mjs)$': '<rootDir>/test/utils/jest-transform.cjs' },
  transformIgnorePatterns: [],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};

const projects = [
  { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
  { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
  { ...common, displayName: 'sdk', testMatch: ['<rootDir>/sdk/test/**/*.test.ts'] },
  // The console in headless Chromium (npm run test:console); npm test leaves it out.
  { ...common, displayName: 'console', testMatch: ['<rootDir>/console/test/**/*.test.ts'] },
  // Tests that wait out default timeouts (30-60 s of real time each): npm run test:slow, which CI runs.
  { ...common, displayName: 'slow', testMatch: ['<rootDir>/test/slow/**/*.slow-spec.ts'] },
  // Suites that need MariaDB and Redis (npm run test:services); npm test leaves them out.
  { ...common, displayName: 'services', testMatch: ['<rootDir>/test/services/**/*.services-spec.ts'] },
];

// `--selectProjects` takes several names: a test path written after it would be read as a project
// name and the whole project run. Say so instead of running for minutes.
const names = projects.map((project) => project.displayName);
const at = process.argv.indexOf('--selectProjects');
for (const arg of at < 0 ? [] : process.argv.slice(at + 1)) {
  if (arg.startsWith('-')) break;
  if (!names.includes(arg)) {
    throw new Error(`--selectProjects ${arg}: no such project (${names.join(', ')}). Put test paths first.`);
  }
}

export default {
  projects,
  // Builds dist/ and sdk/dist/ once, when older than their sources: the suites that spawn the service,
  // the CLI, the examples or a browser run what was built.
  globalSetup: '<rootDir>/test/utils/global-setup.cjs',
  testTimeout: 30000,
  // A worker that ran e2e files takes seconds, not Jest's default 500 ms, to exit on this 2-core machine
  // (docs/architecture.md, "Tests"); one that cannot exit at all is still force-exited, and reported.
  workerGracefulExitTimeout: 10000,
};
