// A real OpenID provider (the oidc-provider package) on 127.0.0.1, in a process of its own: it is
// an ES module that jest's CommonJS mode would have to compile. It prints {"issuer"} once listening,
// then reads the client's redirect_uri from stdin (known only once the service has started) and
// prints "ready". Any login is accepted with any password: the login is the email, and a login
// starting with "unverified:" has email_verified false.
//
// The login page is our own, not oidc-provider's devInteractions: theirs loads a font from
// fonts.googleapis.com (a request to another origin, which the console tests refuse, and a wait
// where there is no network) and has unlabelled fields. Like a real provider's, its fields are
// `required`: a browser does not submit the form until both are filled. The client is first-party,
// so consent is given without a page.
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
  features: { devInteractions: { enabled: false } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
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

const escape = (text) => text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

const loginPage = (uid) => `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Test identity provider</title></head>
<body>
<main>
<h1>Sign in to the test identity provider</h1>
<form method="post" action="/interaction/${escape(uid)}">
<input type="hidden" name="prompt" value="login">
<p><label for="login">Email</label> <input id="login" name="login" type="text" required autocomplete="username"></p>
<p><label for="password">Password</label> <input id="password" name="password" type="password" required autocomplete="current-password"></p>
<p><button type="submit">Sign in</button></p>
</form>
</main>
</body>
</html>
`;

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

/** GET shows the login form; its POST signs the login in; consent is given at once. */
async function interaction(req, res) {
  const { uid, prompt, params, session, grantId } = await provider.interactionDetails(req, res);
  if (prompt.name === 'consent') {
    const grant = grantId
      ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
    if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
    await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } });
    return;
  }
  if (req.method === 'POST') {
    const login = (await readForm(req)).get('login');
    if (login) {
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: login } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
  }
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(loginPage(uid));
}

const callback = provider.callback();
server.on('request', (req, res) => {
  if (!/^\/interaction\/[\w-]+$/.test(new URL(req.url, issuer).pathname)) return callback(req, res);
  interaction(req, res).catch((error) => {
    process.stderr.write(`test provider: ${error.stack}\n`);
    res.writeHead(400, { 'content-type': 'text/plain' });
    res.end(`The sign-in failed: ${error.message}\n`);
  });
});
process.stdout.write('ready\n');
lines.on('close', () => process.exit(0));
