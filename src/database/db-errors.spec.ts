import { describe, expect, it } from '@jest/globals';
import { QueryFailedError } from 'typeorm';
import { ApiError } from '../common/http/errors.js';
import {
  ACQUIRE_TIMEOUT,
  databaseFailure,
  isCommitOutcomeUnknown,
  isConnectionLost,
  isDatabaseBusy,
  isDatabaseUnavailable,
  STATEMENT_TIMEOUT,
  takenField,
} from './db-errors.js';

/** An error as mysql2 makes it: a message and driver fields. */
const driver = (message: string, fields: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), fields);
/** As TypeORM hands a failed statement on. */
const failed = (sql: string, error: Error, parameters: unknown[] = ['secret-parameter']) =>
  new QueryFailedError(sql, parameters, error);

describe('database errors', () => {
  // What mysql2 3.x and MariaDB produce when the server is away, as they reach our code.
  const lost = [
    driver('Connection lost: The server closed the connection.', {
      code: 'PROTOCOL_CONNECTION_LOST',
      fatal: true,
    }),
    driver('read ECONNRESET', { code: 'ECONNRESET', errno: -104, syscall: 'read', fatal: true }),
    driver('write EPIPE', { code: 'EPIPE', errno: -32, syscall: 'write', fatal: true }),
    driver("Can't add new command when connection is in closed state", { fatal: true }),
    driver('Pool is closed.'),
    driver('Server shutdown in progress', { code: 'ER_SERVER_SHUTDOWN', errno: 1053 }),
    driver('Connection was killed', { code: 'ER_CONNECTION_KILLED', errno: 1927 }),
    driver('Query execution was interrupted', { code: 'ER_QUERY_INTERRUPTED', errno: 1317 }),
    driver('The client was disconnected by the server because of inactivity.', {
      code: 'ER_CLIENT_INTERACTION_TIMEOUT',
      errno: 4031,
    }),
  ];
  const unreachable = [
    driver('connect ECONNREFUSED 127.0.0.1:3306', {
      code: 'ECONNREFUSED',
      errno: -111,
      syscall: 'connect',
      fatal: true,
    }),
    driver('connect ETIMEDOUT', { code: 'ETIMEDOUT', errorno: 'ETIMEDOUT', syscall: 'connect', fatal: true }),
    driver('Query inactivity timeout', {
      code: 'PROTOCOL_SEQUENCE_TIMEOUT',
      errorno: 'PROTOCOL_SEQUENCE_TIMEOUT',
      syscall: 'query',
    }),
    driver('No database connection within 2000 ms.', { code: ACQUIRE_TIMEOUT }),
    driver('No answer from the database within 2500 ms.', { code: STATEMENT_TIMEOUT }),
    driver('getaddrinfo ENOTFOUND db.internal', { code: 'ENOTFOUND' }),
    driver('connect EHOSTUNREACH 10.0.0.5:3306', { code: 'EHOSTUNREACH' }),
    driver('Too many connections', { code: 'ER_CON_COUNT_ERROR', errno: 1040 }),
    driver('The MariaDB server is running with the --read-only option so it cannot execute this statement', {
      code: 'ER_OPTION_PREVENTS_STATEMENT',
      errno: 1290,
    }),
    driver('Queue limit reached.'),
  ];

  it('tells a database that is away, whether the error came with a statement or before one', () => {
    for (const error of [...lost, ...unreachable]) {
      expect({
        message: error.message,
        raw: isDatabaseUnavailable(error),
        statement: isDatabaseUnavailable(failed('SELECT 1', error)),
      }).toEqual({
        message: error.message,
        raw: true,
        statement: true,
      });
    }
  });

  it('tells a lost or closed connection, which a unit of work may run again, from a silent or refusing server', () => {
    for (const error of lost)
      expect({ message: error.message, lost: isConnectionLost(failed('START TRANSACTION', error)) }).toEqual({
        message: error.message,
        lost: true,
      });
    for (const error of unreachable)
      expect({ message: error.message, lost: isConnectionLost(error) }).toEqual({
        message: error.message,
        lost: false,
      });
  });

  it('leaves other failures alone: a bad statement, a duplicate, a busy database, a refusal of ours', () => {
    const others = [
      failed(
        'SELECT x',
        driver("Unknown column 'x' in 'field list'", { code: 'ER_BAD_FIELD_ERROR', errno: 1054 }),
      ),
      failed(
        'INSERT INTO users',
        driver("Duplicate entry 'a' for key 'uq_users_email'", { code: 'ER_DUP_ENTRY', errno: 1062 }),
      ),
      failed(
        'UPDATE projects',
        driver('Lock wait timeout exceeded; try restarting transaction', {
          code: 'ER_LOCK_WAIT_TIMEOUT',
          errno: 1205,
        }),
      ),
      failed('UPDATE projects', driver('database is locked', { code: 'SQLITE_BUSY' })),
      driver('Access denied for user', { code: 'ER_ACCESS_DENIED_ERROR', errno: 1045 }),
      new ApiError(422, 'The connection is in closed state.'),
      new TypeError("Cannot read properties of undefined (reading 'id')"),
      null,
      'a string',
    ];
    for (const error of others)
      expect({ error: String(error), unavailable: isDatabaseUnavailable(error) }).toEqual({
        error: String(error),
        unavailable: false,
      });
    expect(isDatabaseBusy(others[2])).toBe(true);
  });

  it('knows a COMMIT sent and unanswered from one that never went out, and from any other statement', () => {
    const timedOut = driver('No answer from the database within 2500 ms.', { code: STATEMENT_TIMEOUT });
    const gone = driver('Connection lost: The server closed the connection.', {
      code: 'PROTOCOL_CONNECTION_LOST',
      fatal: true,
    });
    expect(isCommitOutcomeUnknown(failed('COMMIT', timedOut, []))).toBe(true);
    expect(isCommitOutcomeUnknown(failed('COMMIT', gone, []))).toBe(true);
    // mysql2 refused it on a connection already closed: it never reached the server, which rolled back.
    expect(
      isCommitOutcomeUnknown(
        failed(
          'COMMIT',
          driver("Can't add new command when connection is in closed state", { fatal: true }),
          [],
        ),
      ),
    ).toBe(false);
    expect(isCommitOutcomeUnknown(failed('INSERT INTO `licenses` VALUES (?)', timedOut))).toBe(false);
    expect(
      isCommitOutcomeUnknown(
        failed('COMMIT', driver('Deadlock found when trying to get lock', { errno: 1213 }), []),
      ),
    ).toBe(false);
    expect(isCommitOutcomeUnknown(timedOut)).toBe(false);
  });

  it('describes a failure for the log by its code and message, never by its statement or parameters', () => {
    const error = failed(
      'SELECT * FROM licenses WHERE uuid_hash = ?',
      driver('read ECONNRESET', { code: 'ECONNRESET', errno: -104 }),
    );
    expect(databaseFailure(error)).toEqual({ code: 'ECONNRESET', message: 'read ECONNRESET' });
    expect(JSON.stringify(databaseFailure(error))).not.toContain('secret-parameter');
    expect(databaseFailure(driver('Query execution was interrupted', { errno: 1317 }))).toEqual({
      code: 1317,
      message: 'Query execution was interrupted',
    });
  });
});

describe('takenField', () => {
  const failed = (driver: Record<string, unknown>) =>
    new QueryFailedError('INSERT …', [], Object.assign(new Error(String(driver.message)), driver));

  it.each([
    [
      'SQLite, one column',
      { code: 'SQLITE_CONSTRAINT_UNIQUE', message: 'UNIQUE constraint failed: projects.slug' },
      { field: 'slug', message: 'The slug has already been taken.' },
    ],
    [
      'SQLite, two columns',
      {
        code: 'SQLITE_CONSTRAINT_UNIQUE',
        message: 'UNIQUE constraint failed: licenses.project_id, licenses.title',
      },
      { field: 'title', message: 'The title has already been taken.' },
    ],
    [
      'MariaDB',
      {
        code: 'ER_DUP_ENTRY',
        errno: 1062,
        message: "Duplicate entry '7-shop.example.com' for key 'uq_project_domains_project_domain'",
      },
      { field: 'domain', message: 'The domain has already been taken.' },
    ],
    [
      'MySQL 8',
      {
        code: 'ER_DUP_ENTRY',
        errno: 1062,
        message: "Duplicate entry '7-pro' for key 'injectables.uq_injectables_project_slug'",
      },
      { field: 'slug', message: 'The slug has already been taken.' },
    ],
    [
      'users',
      { code: 'ER_DUP_ENTRY', errno: 1062, message: "Duplicate entry 'a@b.c' for key 'uq_users_email'" },
      { field: 'email', message: 'The email has already been taken.' },
    ],
  ])('%s', (_label, driver, expected) => {
    expect(takenField(failed(driver))).toEqual(expected);
  });

  it('answers null for an index no client value can run into, and for anything but a unique violation', () => {
    expect(
      takenField(
        failed({
          code: 'ER_DUP_ENTRY',
          errno: 1062,
          message: "Duplicate entry 'x' for key 'uq_licenses_uuid_hash'",
        }),
      ),
    ).toBeNull();
    expect(
      takenField(
        failed({
          code: 'SQLITE_CONSTRAINT_UNIQUE',
          message:
            'UNIQUE constraint failed: license_activations.license_id, license_activations.domain, license_activations.host',
        }),
      ),
    ).toBeNull();
    expect(
      takenField(failed({ code: 'ER_LOCK_DEADLOCK', errno: 1213, message: 'Deadlock found' })),
    ).toBeNull();
    expect(takenField(new Error('UNIQUE constraint failed: projects.slug'))).toBeNull();
  });
});
