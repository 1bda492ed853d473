// A real OpenID provider (the oidc-provider package) on 127.0.0.1, in a process of its own: it is
// an ES module that jest's CommonJS mode would have to compile. It prints {"issuer"} once listening,
// then reads the client's redirect_uri from stdin (known only once the service has started) and
// prints "ready". Any login is accepted with any password: the login is the email, and a login
// starting with "unverified:" has email_verified false.
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import Provider from 'oidc-provider';

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;
process.stdout.write(`${JSON.stringify({ issuer })}\n`);

const lines = createInterface({ input: process.stdin });
const redirectUri = await new Promise((resolve) => lines.once('line', resolve));

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'licensegate',
      client_secret: 'a-test-client-secret-of-some-length',
      redirect_uris: [redirectUri.trim()],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  // The email claims go into the ID token itself, as the service reads them there.
  conformIdTokenClaims: false,
  cookies: { keys: ['a-test-cookie-key'] },
  features: { devInteractions: { enabled: true } },
  async findAccount(_ctx, id) {
    const unverified = id.startsWith('unverified:');
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          email: unverified ? id.slice('unverified:'.length) : id,
          email_verified: !unverified,
        };
      },
    };
  },
});
provider.on('server_error', (_ctx, error) => process.stderr.write(`oidc-provider: ${error.stack}\n`));
server.on('request', provider.callback());
process.stdout.write('ready\n');
lines.on('close', () => process.exit(0));
