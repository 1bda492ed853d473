import type { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { AuthService, NewUser } from '../../src/auth/auth.service.js';
import type { UserEntity } from '../../src/auth/user.entity.js';

let seq = 0;
const unique = () => `${Date.now().toString(36)}${(seq++).toString(36)}${randomBytes(2).toString('hex')}`;

export async function makeUser(app: INestApplication, overrides: Partial<NewUser> = {}): Promise<UserEntity> {
  return app.get(AuthService).createUser({ email: `user-${unique()}@example.test`, ...overrides });
}

/** An API key for `user`; returns the plaintext to send as X-API-KEY. */
export async function makeApiKey(
  app: INestApplication,
  user: UserEntity,
  options: { project_id?: number | null; expires_at?: Date | null; name?: string } = {},
): Promise<string> {
  const { plaintext } = await app.get(AuthService).createKey(user, options);
  return plaintext;
}

/** A user with a global key, the usual caller of management endpoints. */
export async function makeAccount(app: INestApplication, overrides: Partial<NewUser> = {}) {
  const user = await makeUser(app, overrides);
  return { user, key: await makeApiKey(app, user) };
}
