// The SDK has no dependencies of its own, not even to build or test: TypeScript, esbuild and Jest
// are the repository's devDependencies (one lockfile, one `npm ci` at the root), found by Node's
// lookup up the directory tree from sdk/.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SDK = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = join(SDK, '..');

const require = createRequire(import.meta.url);

/** The path of a module of the repository's toolchain, or a clear exit when it is not installed. */
export function resolveTool(specifier) {
  try {
    return require.resolve(specifier);
  } catch {
    const name = specifier.startsWith('@')
      ? specifier.split('/').slice(0, 2).join('/')
      : specifier.split('/')[0];
    console.error(
      `@licensegate/sdk builds and tests with the repository's ${name}: run \`npm ci\` at the repository root (${ROOT}) first.`,
    );
    process.exit(1);
  }
}
