import { runCli } from './admin-cli.js';

// The admin CLI's entry (npm run cli): the commands live in admin-cli.ts, which tests also run in-process.
process.exitCode = await runCli(process.argv.slice(2));
