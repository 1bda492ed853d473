import { QueryFailedError } from 'typeorm';

const driverError = (error: unknown) =>
  error instanceof QueryFailedError ? (error as QueryFailedError & { driverError?: { code?: string; errno?: number } }).driverError : undefined;

/** A unique index refused the write (SQLite or MySQL/MariaDB). */
export function isUniqueViolation(error: unknown): boolean {
  const driver = driverError(error);
  return driver?.code === 'SQLITE_CONSTRAINT_UNIQUE' || driver?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || driver?.code === 'ER_DUP_ENTRY' || driver?.errno === 1062;
}

/** InnoDB rolled the whole transaction back to break a deadlock (MySQL/MariaDB). */
export function isDeadlock(error: unknown): boolean {
  return driverError(error)?.errno === 1213;
}

/**
 * The database could not take the statement now, through no fault of the request: a lock wait timed
 * out or a deadlock outlived its retries (MySQL/MariaDB), or the SQLite file was busy.
 */
export function isDatabaseBusy(error: unknown): boolean {
  const driver = driverError(error);
  return isDeadlock(error) || driver?.errno === 1205 || driver?.code === 'SQLITE_BUSY' || driver?.code === 'SQLITE_LOCKED';
}
