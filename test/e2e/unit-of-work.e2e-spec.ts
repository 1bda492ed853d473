import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UserEntity } from '../../src/auth/user.entity.js';
import { lockedRow, UnitOfWork } from '../../src/database/unit-of-work.js';
import { makeUser } from '../factories/index.js';
import { createTestApp, TEST_DB, TestApp } from '../utils/test-app.js';

describe('units of work on the real database', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  it('two units that lock the same rows in opposite order both complete: the deadlock victim runs again', async () => {
    const unit = t.app.get(UnitOfWork);
    const [a, b] = [await makeUser(t.app), await makeUser(t.app)];
    let attempts = 0;
    let arrived = 0;
    // Each unit holds its first row until the other has taken its own (or 300 ms pass: on SQLite a
    // unit excludes every other statement, so the second only starts once the first has ended).
    const bothHold = async () => {
      arrived++;
      for (let waited = 0; arrived < 2 && waited < 300; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    const crossing = (first: number, second: number, name: string) =>
      unit.run(async (manager) => {
        attempts++;
        await lockedRow(manager, UserEntity, first);
        await bothHold();
        await lockedRow(manager, UserEntity, second);
        await manager.update(UserEntity, { id: first }, { name: `${name} ${attempts}` });
        return name;
      });
    await expect(Promise.all([crossing(a.id, b.id, 'one'), crossing(b.id, a.id, 'two')])).resolves.toEqual(['one', 'two']);
    // MariaDB rolled one of them back as the deadlock's victim, and it ran again.
    expect(attempts).toBe(TEST_DB === 'mysql' ? 3 : 2);
  });
});
