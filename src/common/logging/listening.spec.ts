import { describe, expect, it } from '@jest/globals';
import { databaseOf, listening, noAccountYet, sayListening } from './listening.js';

describe('the listening line', () => {
  it('names the API, its docs and the console, or the first two when the console is off, and the database', () => {
    expect(listening(3000, true, 'sqlite:./data/licensegate.sqlite')).toEqual({
      msg: 'LicenseGate is listening: the API at http://localhost:3000/api/v1/, its docs at http://localhost:3000/api/docs, the console at http://localhost:3000/console/; database: SQLite ./data/licensegate.sqlite',
      api: 'http://localhost:3000/api/v1/',
      docs: 'http://localhost:3000/api/docs',
      console: 'http://localhost:3000/console/',
      database: 'SQLite ./data/licensegate.sqlite',
    });
    expect(listening(8080, false, 'mysql://lg:s3cret@db.internal:3306/licensegate')).toEqual({
      msg: 'LicenseGate is listening: the API at http://localhost:8080/api/v1/, its docs at http://localhost:8080/api/docs; database: MySQL db.internal:3306/licensegate',
      api: 'http://localhost:8080/api/v1/',
      docs: 'http://localhost:8080/api/docs',
      database: 'MySQL db.internal:3306/licensegate',
    });
  });

  it('never shows the database password, nor its user', () => {
    expect(databaseOf('mariadb://root:hunter2@127.0.0.1/test')).toBe('MySQL 127.0.0.1/test');
    expect(databaseOf('mysql://[not a host')).toBe('MySQL');
  });

  it('is written as a plain sentence to a terminal, and not into piped stdout, which stays JSON lines', () => {
    const written: string[] = [];
    const write = (chunk: string) => written.push(chunk) > 0;
    sayListening('LicenseGate is listening: the API at …', { isTTY: true, write });
    expect(written).toEqual(['LicenseGate is listening: the API at …\n']);
    sayListening('LicenseGate is listening: the API at …', { isTTY: false, write });
    expect(written).toHaveLength(1);
  });

  it('with no user yet, says where the first account is made: the console, or the API without it', () => {
    expect(noAccountYet('https://licenses.example.com', 'the-code', true)).toBe(
      'No account yet: open https://licenses.example.com/console/#/setup/the-code to create the first one.',
    );
    expect(noAccountYet('http://localhost:3000', 'the-code', false)).toBe(
      'No account yet: create the first one with POST http://localhost:3000/api/v1/auth/setup and the code the-code.',
    );
  });
});
