import type { TestApp } from './test-app.js';

/*
 * What the webhook outbox holds for a project. A write commits its events before it answers, so
 * "and nothing more" is read here rather than waited for at a receiver.
 */

/** How many events of `type` the outbox holds for the project. */
export async function outboxCount(t: TestApp, projectId: number, type: string): Promise<number> {
  const [row] = await t.dataSource.query<Array<{ n: number | string }>>(
    'SELECT COUNT(*) AS n FROM webhook_deliveries WHERE project_id = ? AND type = ?',
    [projectId, type],
  );
  return Number(row.n);
}

/** The `data` of the project's events of `type` in the outbox, oldest first. */
export async function outboxData(
  t: TestApp,
  projectId: number,
  type: string,
): Promise<Array<Record<string, unknown>>> {
  const rows = await t.dataSource.query<Array<{ payload: string }>>(
    'SELECT payload FROM webhook_deliveries WHERE project_id = ? AND type = ? ORDER BY id',
    [projectId, type],
  );
  return rows.map((row) => (JSON.parse(row.payload) as { data: Record<string, unknown> }).data);
}
