import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * A comment points at docs/ in the repository, never at the product's contract or the seed (documents
 * outside it, which a reader of the code does not have).
 */
describe('comments in the code', () => {
  it('name no section of a document outside the repository', () => {
    const repository = join(__dirname, '..', '..');
    const folders = [
      'src',
      'test',
      'scripts',
      'console/src',
      'console/test',
      'sdk/src',
      'sdk/test',
      'sdk/scripts',
      'examples',
      'sdk-php',
      'sdk-python',
    ];
    const files = folders.flatMap((folder) =>
      (readdirSync(join(repository, folder), { recursive: true }) as string[])
        .filter(
          (file) =>
            /\.(ts|cts|mts|tsx|js|mjs|cjs|php|py)$/.test(file) &&
            !/(^|\/)(node_modules|vendor|dist)\//.test(file),
        )
        .map((file) => join(repository, folder, file)),
    );
    expect(files.length).toBeGreaterThan(300);
    const outside = /\b(SPEC|Spec) ?\d|\b[Ss]eed \d+\.\d+/;
    const found = files.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          outside.test(line) ? [`${relative(repository, file)}:${i + 1}: ${line.trim()}`] : [],
        ),
    );
    expect(found).toEqual([]);
  });
});
