// Under the sign-in form: where a first API key comes from. The console cannot make one (it needs a
// key to ask the API anything); the admin CLI on the server can (README "Accounts and API keys").
export function KeyHelp() {
  return (
    <details class="box key-help">
      <summary>No API key yet?</summary>
      <p>
        Keys are made on the server with the admin CLI, run in the server&apos;s folder with the same
        environment as the server: its database settings (<code>DATABASE_URL</code>, and{' '}
        <code>APP_KEY_FILE</code> or <code>APP_KEY</code>), or the key lands in another database and this
        sign-in refuses it. For a first account:
      </p>
      <pre>
        <code>
          npm run -s cli -- users:create --email you@example.com{'\n'}
          npm run -s cli -- keys:create --email you@example.com
        </code>
      </pre>
      <p>
        The second command prints <code>&quot;key&quot;: &quot;lg_…&quot;</code> once: paste that key here.
        Once signed in, more keys (read-only, or for one project) are made under API keys.
      </p>
    </details>
  );
}
