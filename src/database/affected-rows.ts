import { DataSource, EntityManager } from 'typeorm';
import { isTransient } from './db-errors.js';

/** Statements racing on one counter row may be refused a few times (isTransient) before one lands. */
export const CONTENDED = { attempts: 10, retryable: isTransient };

/** Runs one statement (in `manager`'s transaction when given) and answers the rows it changed. */
export async function affectedRows(
  dataSource: DataSource,
  sql: string,
  params: unknown[],
  manager?: EntityManager,
): Promise<number> {
  if (manager?.queryRunner) return Number((await manager.queryRunner.query(sql, params, true)).affected ?? 0);
  const runner = dataSource.createQueryRunner();
  try {
    return Number((await runner.query(sql, params, true)).affected ?? 0);
  } finally {
    await runner.release();
  }
}
