import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeAccount, makeProject } from '../factories/index.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * Racing writes of one unique value: the services check first, so most are refused there; those that
 * pass the check together meet the unique index, which answers the same 422 (one place maps it).
 */
describe('racing writes of one unique value', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
    ({ key } = await makeAccount(t.app));
  });
  afterAll(async () => t.close());

  /** Sends `n` at once; answers the statuses sorted and the distinct 422 error objects. */
  async function race(n: number, send: () => Promise<{ status: number; body: { errors: unknown } }>) {
    const answers = await Promise.all(Array.from({ length: n }, send));
    return {
      statuses: answers.map((a) => a.status).sort(),
      errors: [
        ...new Set(answers.filter((a) => a.status === 422).map((a) => JSON.stringify(a.body.errors))),
      ].map((e) => JSON.parse(e)),
    };
  }

  const once = (n: number, created: number) => [...Array(created).fill(201), ...Array(n - created).fill(422)];

  it('a project slug', async () => {
    const result = await race(8, () =>
      t.http().post('/api/v1/project').set('X-API-KEY', key).send({ name: 'Race', slug: 'race-slug' }),
    );
    expect(result).toEqual({
      statuses: once(8, 1),
      errors: [{ slug: ['The slug has already been taken.'] }],
    });
  });

  it('a domain of a project', async () => {
    const project = await makeProject(t, key);
    const result = await race(8, () =>
      t
        .http()
        .post(`/api/v1/project/${project.id}/domains`)
        .set('X-API-KEY', key)
        .send({ domain: 'race.example.com' }),
    );
    expect(result).toEqual({
      statuses: once(8, 1),
      errors: [{ domain: ['The domain has already been taken.'] }],
    });
  });

  it('a license title in a project', async () => {
    const project = await makeProject(t, key);
    const result = await race(8, () =>
      t
        .http()
        .post(`/api/v1/project/${project.id}/licenses`)
        .set('X-API-KEY', key)
        .send({ title: 'Race title' }),
    );
    expect(result).toEqual({
      statuses: once(8, 1),
      errors: [{ title: ['The title has already been taken.'] }],
    });
  });

  it('an injectable slug in a project', async () => {
    const project = await makeProject(t, key);
    const result = await race(6, () =>
      t
        .http()
        .post(`/api/v1/project/${project.id}/injectables`)
        .set('X-API-KEY', key)
        .send({ slug: 'race', content: 'x', secret: 's3cret-s3cret' }),
    );
    expect(result).toEqual({
      statuses: once(6, 1),
      errors: [{ slug: ['The slug has already been taken.'] }],
    });
  });
});
