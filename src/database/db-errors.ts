import { HttpException } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { DOMAIN_TAKEN, EMAIL_TAKEN, SLUG_TAKEN, TITLE_TAKEN } from '../common/http/errors.js';

interface DriverError {
  code?: string;
  errno?: number;
  message?: string;
}

const driverError = (error: unknown) =>
  error instanceof QueryFailedError
    ? (error as QueryFailedError & { driverError?: DriverError }).driverError
    : undefined;

/**
 * The driver's own error: inside a QueryFailedError for a statement that failed, or the error itself
 * when TypeORM could not even get a connection (it passes those on as they are). Not told by
 * `instanceof Error`: node's socket errors come from another realm under test runners' sandboxes.
 */
const cause = (error: unknown): DriverError | undefined =>
  driverError(error) ??
  (typeof error === 'object' && error !== null && !(error instanceof HttpException) ? error : undefined);

/** A unique index refused the write (SQLite or MySQL/MariaDB). */
export function isUniqueViolation(error: unknown): boolean {
  const driver = driverError(error);
  return (
    driver?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    driver?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    driver?.code === 'ER_DUP_ENTRY' ||
    driver?.errno === 1062
  );
}

/**
 * The unique indexes a client's value can run into (src/database/migrations), and the field and
 * message it is answered with. Services check first, to report every problem of a body at once; this
 * answers the write that raced another to the same value. SQLite names the columns, MySQL the index.
 */
const UNIQUE_FIELDS: Array<{ index: string; columns: string; field: string; message: string }> = [
  { index: 'uq_projects_slug', columns: 'projects.slug', field: 'slug', message: SLUG_TAKEN },
  {
    index: 'uq_project_domains_project_domain',
    columns: 'project_domains.project_id, project_domains.domain',
    field: 'domain',
    message: DOMAIN_TAKEN,
  },
  {
    index: 'uq_licenses_project_title',
    columns: 'licenses.project_id, licenses.title',
    field: 'title',
    message: TITLE_TAKEN,
  },
  {
    index: 'uq_injectables_project_slug',
    columns: 'injectables.project_id, injectables.slug',
    field: 'slug',
    message: SLUG_TAKEN,
  },
  { index: 'uq_users_email', columns: 'users.email', field: 'email', message: EMAIL_TAKEN },
];

/** The field and message for a write a unique index refused, or null (not a unique violation, or none a client can cause). */
export function takenField(error: unknown): { field: string; message: string } | null {
  if (!isUniqueViolation(error)) return null;
  const message = driverError(error)?.message ?? '';
  // SQLite: "UNIQUE constraint failed: licenses.project_id, licenses.title"; MySQL/MariaDB:
  // "Duplicate entry '7-x' for key 'uq_licenses_project_title'" (MySQL 8: 'licenses.uq_…').
  const columns = /UNIQUE constraint failed: (.+)$/.exec(message)?.[1];
  const index = /for key '(?:[^'.]+\.)?([^'.]+)'$/.exec(message)?.[1];
  const found = UNIQUE_FIELDS.find((unique) => unique.columns === columns || unique.index === index);
  return found ? { field: found.field, message: found.message } : null;
}

/**
 * Whether `error` is a unique violation of this index (MySQL/MariaDB name it) or these columns
 * (SQLite lists them as `table.column, table.column`).
 */
export function violatesUnique(error: unknown, index: string, columns: string): boolean {
  if (!isUniqueViolation(error)) return false;
  const message = driverError(error)?.message ?? '';
  return (
    /UNIQUE constraint failed: (.+)$/.exec(message)?.[1] === columns ||
    /for key '(?:[^'.]+\.)?([^'.]+)'$/.exec(message)?.[1] === index
  );
}

/** InnoDB rolled the whole transaction back to break a deadlock (MySQL/MariaDB). */
export function isDeadlock(error: unknown): boolean {
  return driverError(error)?.errno === 1213;
}

/**
 * MySQL/MariaDB refusals that leave nothing done and may simply be run again: a deadlock's victim
 * (1213), a lock wait that timed out (1205), and MariaDB's "failed to read auto-increment value"
 * (1467), which racing INSERT … SELECT statements can meet.
 */
const TRANSIENT_ERRNOS = new Set([1213, 1205, 1467]);
export function isTransient(error: unknown): boolean {
  const errno = driverError(error)?.errno;
  return errno !== undefined && TRANSIENT_ERRNOS.has(errno);
}

/**
 * The database could not take the statement now, through no fault of the request: a transient
 * refusal that outlived its retries (MySQL/MariaDB), or the SQLite file was busy.
 */
export function isDatabaseBusy(error: unknown): boolean {
  const code = driverError(error)?.code;
  return isTransient(error) || code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

/** Codes of the deadlines src/database/mysql-driver.ts sets: no connection, or no answer, in time. */
export const ACQUIRE_TIMEOUT = 'POOL_ACQUIRE_TIMEOUT';
export const STATEMENT_TIMEOUT = 'STATEMENT_TIMEOUT';

/** The connection went away under the statement, or was already gone: the server no longer has it. */
const LOST_CODES = new Set(['PROTOCOL_CONNECTION_LOST', 'ECONNRESET', 'EPIPE']);
/**
 * Server errors that end the session: shutdown in progress (1053), connection killed (1927 MariaDB,
 * 1317 query interrupted), idle session closed (4031 MySQL 8).
 */
const LOST_ERRNOS = new Set([1053, 1317, 1927, 4031]);
/** mysql2 refuses a statement on a connection it has closed (it was never sent). */
const CLOSED_STATE = /closed state|Pool is closed/;

/** No answer, or no server: refused, unreachable, or silent past a deadline. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  ACQUIRE_TIMEOUT,
  STATEMENT_TIMEOUT,
]);
/**
 * The server refuses new sessions for now (1040 too many connections) or, during a failover, writes
 * (1290 read-only option, 1792 read-only transaction, 1836 read-only mode).
 */
const UNAVAILABLE_ERRNOS = new Set([1040, 1290, 1792, 1836]);
/** The pool's wait list is full: the database is not keeping up. */
const QUEUE_FULL = /^Queue limit reached/;

/**
 * The connection was lost, or was already closed before the statement went out. Nothing of an open
 * transaction survives that (the server rolls it back), so a unit of work that failed so before its
 * COMMIT may run again on a fresh connection.
 */
export function isConnectionLost(error: unknown): boolean {
  const driver = cause(error);
  if (!driver) return false;
  return (
    (driver.code !== undefined && LOST_CODES.has(driver.code)) ||
    (driver.errno !== undefined && LOST_ERRNOS.has(driver.errno)) ||
    CLOSED_STATE.test(driver.message ?? '')
  );
}

/**
 * MySQL/MariaDB is away: refused, unreachable, the connection lost, or no answer within the
 * deadlines of src/database/mysql-driver.ts. Callers may try again in a moment; never a 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (isConnectionLost(error)) return true;
  const driver = cause(error);
  if (!driver) return false;
  return (
    (driver.code !== undefined && UNREACHABLE_CODES.has(driver.code)) ||
    (driver.errno !== undefined && UNAVAILABLE_ERRNOS.has(driver.errno)) ||
    QUEUE_FULL.test(driver.message ?? '')
  );
}

/**
 * A COMMIT was sent and the database went away before it answered (lost, or silent past the
 * deadline): the change may or may not be stored. (A COMMIT refused on a connection already closed
 * never went out: the server rolled that transaction back.)
 */
export function isCommitOutcomeUnknown(error: unknown): boolean {
  return (
    error instanceof QueryFailedError &&
    /^\s*COMMIT\b/i.test(error.query ?? '') &&
    isDatabaseUnavailable(error) &&
    !CLOSED_STATE.test(driverError(error)?.message ?? '')
  );
}

/** What to log of a database failure: never the statement's parameters (keys, secrets). */
export function databaseFailure(error: unknown): { code: string | number | undefined; message: string } {
  const driver = cause(error);
  return { code: driver?.code ?? driver?.errno, message: String(driver?.message ?? error) };
}
