import { expect } from '@jest/globals';
import type { Response } from 'supertest';

/** Asserts the error envelope (docs/decisions.md#the-envelope-and-errors) and returns the body. */
export function expectError(res: Response, status: number, fields?: string[]) {
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { status: 'error' } });
  expect(typeof res.body.message).toBe('string');
  expect(res.body.message.length).toBeGreaterThan(0);
  expect(Object.keys(res.body).sort()).toEqual(['data', 'errors', 'message', 'status']);
  if (fields) {
    expect(res.body.errors).not.toBeNull();
    for (const field of fields) expect(res.body.errors[field]?.length).toBeGreaterThan(0);
  }
  return res.body;
}

/** Asserts the success envelope and returns `data`. */
export function expectSuccess(res: Response, status = 200) {
  expect({ status: res.status, body: res.body }).toMatchObject({
    status,
    body: { status: 'success', message: 'Success', errors: null },
  });
  return res.body.data;
}
