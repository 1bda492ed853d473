import { describe, expect, it, jest } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../common/http/errors.js';
import { Clock } from '../common/time.js';
import { loadConfig } from '../config/app-config.js';
import { SsoService } from './sso.service.js';

// openid-client cannot be loaded: a package missing from an image, a broken install.
jest.mock('openid-client', () => {
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

  it("fails as itself, a 500, not as the provider's 502, and again on the next sign-in", async () => {
    for (let attempt = 0; attempt < 2; attempt++) {
      const failure = await service.start().then(
        () => null,
        (error: unknown) => error,
      );
      expect(failure).not.toBeInstanceOf(ApiError);
      expect((failure as Error).message).toBe("Cannot find module 'openid-client'");
    }
  });
});
