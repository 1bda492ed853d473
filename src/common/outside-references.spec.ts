import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * A comment points at docs/ in the repository, never at the product's contract or the seed (documents
 * outside it, which a reader of the code does not have).
 */
describe('comments in src/', () => {
  it('name no section of a document outside the repository', () => {
    const root = join(__dirname, '..');
    const files = (readdirSync(root, { recursive: true }) as string[])
      .filter((file) => /\.(ts|cts|mts)$/.test(file))
      .map((file) => join(root, file));
    expect(files.length).toBeGreaterThan(50);
    const outside = /\b(SPEC|Spec) ?\d|\b[Ss]eed \d+\.\d+/;
    const found = files.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          outside.test(line) ? [`${relative(root, file)}:${i + 1}: ${line.trim()}`] : [],
        ),
    );
    expect(found).toEqual([]);
  });
});
