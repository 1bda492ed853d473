// The warning a vendor needs before pasting an endpoint URL into a payment provider: the URL starts
// with PUBLIC_URL, and without it (or with http) no provider can deliver to it (docs/payments.md).
import { api, unwrap } from '../api';
import { useLoad } from '../ui';

export function PublicUrlWarning() {
  const server = useLoad(() => unwrap(api.GET('/api/v1/server')), []);
  const s = server.data;
  if (!s || (s.public_url_set && s.public_url_https)) return null;
  return (
    <div class="warning">
      <h3>No payment provider can reach these endpoint URLs yet</h3>
      <p>
        They start with <code>{s.public_url}</code>
        {s.public_url_set
          ? ', which is not https: payment providers deliver to https addresses only.'
          : ', this server’s own address: PUBLIC_URL is not set.'}{' '}
        Set <code>PUBLIC_URL</code> to the https address this server is reached at from the internet (scheme,
        host and port: https and <code>licenses.example.com</code>, say) in its environment or{' '}
        <code>.env</code>, restart it, and copy the endpoint URL again. Signed events sent from this machine,
        such as a provider&apos;s command-line tool forwarding to it, are received meanwhile.
      </p>
    </div>
  );
}
