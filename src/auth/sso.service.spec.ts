import { describe, expect, it, jest } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../common/http/errors.js';
import { Clock } from '../common/time.js';
import { loadConfig } from '../config/app-config.js';
import { SsoService } from './sso.service.js';

// openid-client cannot be loaded: a package missing from an image, a broken install. This repository's
// transform does not hoist jest.mock above the imports: the mock is in place in time because the
// service loads openid-client at the first sign-in, not when it is imported.
let mockLoads = 0;
jest.mock('openid-client', () => {
  mockLoads++;
  throw new Error("Cannot find module 'openid-client'");
});

describe('SsoService when openid-client cannot be loaded', () => {
  const config = loadConfig(
    {
      APP_KEY: randomBytes(32).toString('base64'),
      OIDC_ISSUER: 'https://id.example.com',
      OIDC_CLIENT_ID: 'licensegate',
      OIDC_CLIENT_SECRET: 'secret',
    },
    () => undefined,
  );
  // Nothing before the library is loaded reads the database or the members.
  const service = new SsoService(
    null as never,
    null as never,
    null as never,
    null as never,
    new Clock(),
    config,
  );

  it("fails as itself (the envelope's 500), not as an ApiError (the provider's 502), and loads again at the next sign-in", async () => {
    for (let attempt = 1; attempt <= 2; attempt++) {
      const failure = await service.start().then(
        () => null,
        (error: unknown) => error,
      );
      expect(failure).not.toBeInstanceOf(ApiError);
      expect((failure as Error).message).toBe("Cannot find module 'openid-client'");
      expect(mockLoads).toBe(attempt);
    }
  });
});
