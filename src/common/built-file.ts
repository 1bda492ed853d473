import { basename, dirname, join, resolve } from 'node:path';

/**
 * A compiled file of the build, `dist/src/<folder>/<file>`: beside the running build when the process
 * runs it (`node dist/src/main.js`, what npm start runs), else under ./dist (tests run the sources, and
 * test/utils/global-setup.cjs builds dist first). The worker threads' files are found this way.
 */
export function builtFile(folder: string, file: string, entry = process.argv[1] ?? ''): string {
  const dir = dirname(resolve(entry));
  return basename(dir) === 'src' && basename(dirname(dir)) === 'dist'
    ? join(dir, folder, file)
    : resolve('dist/src', folder, file);
}
