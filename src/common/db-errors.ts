import { QueryFailedError } from 'typeorm';

/** A unique index refused the write (SQLite or MySQL/MariaDB). */
export function isUniqueViolation(error: unknown): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const driver = (error as QueryFailedError & { driverError?: { code?: string; errno?: number } }).driverError;
  return driver?.code === 'SQLITE_CONSTRAINT_UNIQUE' || driver?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || driver?.code === 'ER_DUP_ENTRY' || driver?.errno === 1062;
}
