import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The paid answers among a license's daily checks (docs/analytics.md#paid-and-unpaid-by-license).
 * Null on the rows written before it: how many of those were paid was never counted, and a 0 would
 * pass them off as unpaid. New rows always get a number.
 */
export class LicenseUsagePaid1764750000000 implements MigrationInterface {
  name = 'LicenseUsagePaid1764750000000';

  async up(q: QueryRunner): Promise<void> {
    // Plain ALTER TABLE, as in ProjectChangeCounter: addColumn would rebuild the SQLite table.
    await q.query('ALTER TABLE license_usage ADD COLUMN paid integer NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE license_usage DROP COLUMN paid');
  }
}
