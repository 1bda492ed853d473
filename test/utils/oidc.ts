import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The OpenID provider of test/utils/oidc-provider.mjs, and its client's settings for the service. */
export interface TestProvider {
  issuer: string;
  env: Record<string, string>;
  /** Registers the service's redirect_uri; the provider answers from then on. */
  register: (redirectUri: string) => Promise<void>;
  /**
   * Signs `login` in at the provider, starting from the authorization URL the service redirected to:
   * follows the provider's redirects and answers its login page as a browser would.
   * Returns the URL the provider sends the browser back to (the service's callback, with code and state).
   */
  signIn: (authorizationUrl: string, login: string) => Promise<URL>;
  close: () => Promise<void>;
}

export async function startOidcProvider(): Promise<TestProvider> {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ['test/utils/oidc-provider.mjs'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const lines = createInterface({ input: child.stdout });
  const next = () =>
    new Promise<string>((resolve, reject) => {
      lines.once('line', resolve);
      child.once('exit', () => reject(new Error(`the OpenID provider stopped: ${errors}`)));
    });
  const { issuer } = JSON.parse(await next()) as { issuer: string };

  async function signIn(authorizationUrl: string, login: string): Promise<URL> {
    const jar = new Map<string, string>();
    const cookieHeader = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const remember = (res: Response) => {
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const eq = pair.indexOf('=');
        jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1));
      }
    };
    let url = new URL(authorizationUrl);
    let form: URLSearchParams | null = null;
    for (let hop = 0; hop < 20; hop++) {
      if (url.origin !== issuer) return url;
      const res: Response = await fetch(url, {
        method: form ? 'POST' : 'GET',
        redirect: 'manual',
        headers: {
          cookie: cookieHeader(),
          ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body: form?.toString(),
      });
      remember(res);
      form = null;
      const location = res.headers.get('location');
      if (location) {
        url = new URL(location, url);
        continue;
      }
      const page: string = await res.text();
      const prompt: string | undefined = /name="prompt" value="(\w+)"/.exec(page)?.[1];
      if (!prompt) throw new Error(`the OpenID provider answered ${res.status}: ${page.slice(0, 500)}`);
      form = new URLSearchParams(
        prompt === 'login' ? { prompt, login, password: 'any password' } : { prompt },
      );
    }
    throw new Error('the OpenID provider redirected too many times');
  }

  return {
    issuer,
    env: {
      OIDC_ISSUER: issuer,
      OIDC_CLIENT_ID: 'licensegate',
      OIDC_CLIENT_SECRET: 'a-test-client-secret-of-some-length',
    },
    register: async (redirectUri) => {
      child.stdin.write(`${redirectUri}\n`);
      if ((await next()) !== 'ready') throw new Error(`the OpenID provider did not start: ${errors}`);
    },
    signIn,
    close: async () => {
      child.stdin.end();
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}
