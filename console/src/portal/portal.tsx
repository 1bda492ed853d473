// The customer portal (docs/portal.md): what a buyer sees of their licenses, opened from a link the
// vendor's app made. It talks to the API only through the generated client, with the portal's cookie
// (same origin); writes carry the session's CSRF token.
import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import createClient from 'openapi-fetch';
import type { components, paths } from '../../../generated/openapi';
import { ApiFailure, unwrap } from '../api';
import { ErrorMessage, Hidden, Loading, toFailure, useLoad, when } from '../ui';

type PortalSession = components['schemas']['PortalSession'];
type PortalLicense = components['schemas']['PortalLicense'];

/** Same origin: the portal is served by the service it reads; the cookie goes along. */
const api = createClient<paths>({ baseUrl: '', headers: { Accept: 'application/json' } });
let csrf = '';
api.use({
  onRequest({ request }) {
    if (request.method !== 'GET' && csrf) request.headers.set('X-CSRF-Token', csrf);
    return request;
  },
});

/** "Back to shop.example.com" from the vendor's return_url; null when there is none or it names no host. */
function backTo(url: string | null): { href: string; host: string } | null {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    return parsed.host ? { href: url, host: parsed.host } : null;
  } catch {
    return null;
  }
}

export function Portal() {
  const session = useLoad(async () => {
    const data = await unwrap(api.GET('/api/v1/portal/session', {}));
    csrf = data.csrf_token;
    return data;
  }, []);
  const back = backTo(session.data?.return_url ?? null);
  useEffect(() => {
    if (session.data) document.title = `Your licenses: ${session.data.project.name}`;
  }, [session.data]);
  return (
    <>
      <a class="skip" href="#main">
        Skip to your licenses
      </a>
      <header class="top">
        <span class="brand">{session.data ? session.data.project.name : 'Your licenses'}</span>
        {back ? (
          <a class="back" href={back.href}>
            Back to {back.host}
          </a>
        ) : null}
      </header>
      <main id="main" tabIndex={-1}>
        {session.loading && !session.data ? <Loading what="your licenses" /> : null}
        {session.error ? <Ended error={session.error} /> : null}
        {session.data ? <Licenses session={session.data} reload={session.reload} /> : null}
      </main>
    </>
  );
}

function Ended({ error }: { error: ApiFailure }) {
  return (
    <>
      <h1>Your licenses</h1>
      <ErrorMessage error={error} />
      {error.status === 401 ? (
        <p>Open the portal again from the app you bought from: it makes a new link.</p>
      ) : null}
    </>
  );
}

function Licenses({ session, reload }: { session: PortalSession; reload: () => void }) {
  return (
    <>
      <h1>
        Your licenses
        {session.customer ? <span class="sub"> for {session.customer.email}</span> : null}
      </h1>
      {session.licenses.length === 0 ? <p>There is no license here yet.</p> : null}
      {session.licenses.map((license) => (
        <LicenseCard key={license.id} license={license} reload={reload} />
      ))}
      <p class="muted">
        This page stays open until {when(session.expires_at)}; after that, open it again from the app.
      </p>
    </>
  );
}

const STATUS: Record<PortalLicense['status'], string> = {
  active: 'Active',
  revoked: 'Revoked',
  expired: 'Expired',
};

function paymentText(payment: PortalLicense['payment']): string {
  if (payment.state === 'paid') return 'Paid';
  if (payment.state === 'grace') return `Paid until ${when(payment.grace_until)} (payment grace)`;
  return 'Not paid';
}

function LicenseCard({ license, reload }: { license: PortalLicense; reload: () => void }) {
  const headingId = `license-${license.id}`;
  return (
    <section class="portal-license" aria-labelledby={headingId}>
      <h2 id={headingId}>{license.title}</h2>
      <p class="states">
        <span class={`state state-${license.status}`}>
          {STATUS[license.status]}
          {license.status === 'revoked' && license.revoked_at ? ` on ${when(license.revoked_at)}` : ''}
          {license.status === 'expired' && license.expires_at ? ` on ${when(license.expires_at)}` : ''}
        </span>{' '}
        {/* A revoked or expired license unlocks nothing, paid or not. */}
        {license.status === 'active' ? (
          <span class={`state state-${license.payment.state}`}>{paymentText(license.payment)}</span>
        ) : null}
        {license.is_test_license ? <span class="state"> Test license</span> : null}
      </p>
      {license.status === 'revoked' ? (
        <p>
          This license was revoked by the vendor or after a payment stopped: it no longer unlocks the product.
        </p>
      ) : null}
      <dl class="facts">
        <dt>License key</dt>
        <dd>
          <LicenseKey value={license.key} title={license.title} />
        </dd>
        <dt>Plan</dt>
        <dd>{planName(license.plan)}</dd>
        {license.expires_at && license.status !== 'expired' ? (
          <>
            <dt>Expires</dt>
            <dd>{when(license.expires_at)}</dd>
          </>
        ) : null}
        <dt>Sites</dt>
        <dd>
          {license.activations_total}
          {license.max_domains !== null ? ` (at most ${license.max_domains} domains)` : ''}
        </dd>
      </dl>
      <Entitlements entitlements={license.entitlements} title={license.title} />
      <Meters meters={license.meters} title={license.title} />
      <Sites license={license} reload={reload} />
      <OfflineToken license={license} />
    </section>
  );
}

function planName(plan: PortalLicense['plan']): string {
  if (!plan) return 'None';
  const named = plan as { name?: unknown; code?: unknown };
  return typeof named.name === 'string' ? named.name : typeof named.code === 'string' ? named.code : '—';
}

const mask = (key: string) => key.replace(/[0-9a-f]/gi, '•').slice(0, -4) + key.slice(-4);

/** The key masked, with Reveal and Copy; what happened is announced. */
function LicenseKey({ value, title }: { value: string; title: string }) {
  const [shown, setShown] = useState(false);
  const [said, setSaid] = useState('');
  const copy = async () => {
    setSaid('');
    try {
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(value);
      setSaid('Copied');
    } catch {
      setShown(true);
      setSaid('Copy it from the text: select it and press Ctrl+C (Cmd+C).');
    }
  };
  return (
    <span class="key">
      <code>{shown ? value : mask(value)}</code>
      {shown ? null : <Hidden> (hidden)</Hidden>}{' '}
      <button type="button" aria-pressed={shown} onClick={() => setShown(!shown)}>
        Reveal key<Hidden> of {title}</Hidden>
      </button>{' '}
      <button type="button" onClick={() => void copy()}>
        Copy key<Hidden> of {title}</Hidden>
      </button>{' '}
      <span aria-live="polite" role="status" class="said">
        {said}
      </span>
    </span>
  );
}

function Entitlements({
  entitlements,
  title,
}: {
  entitlements: PortalLicense['entitlements'];
  title: string;
}) {
  const entries = Object.entries(entitlements ?? {});
  if (entries.length === 0) return null;
  return (
    <>
      <h3>What {title} includes</h3>
      <dl class="facts">
        {entries.map(([code, value]) => (
          <Fragment key={code}>
            <dt>{code}</dt>
            <dd>{value === true ? 'Yes' : value === false ? 'No' : String(value)}</dd>
          </Fragment>
        ))}
      </dl>
    </>
  );
}

interface Meter {
  used?: number;
  limit?: number | null;
  resets_at?: string;
}

function Meters({ meters, title }: { meters: PortalLicense['meters']; title: string }) {
  const entries = Object.entries((meters ?? {}) as Record<string, Meter>);
  if (entries.length === 0) return null;
  return (
    <>
      <h3>Usage this month</h3>
      <table>
        <caption class="visually-hidden">Metered usage of {title}</caption>
        <thead>
          <tr>
            <th scope="col">Meter</th>
            <th scope="col">Used</th>
            <th scope="col">Limit</th>
            <th scope="col">Resets</th>
          </tr>
        </thead>
        <tbody>
          {entries.map(([code, meter]) => (
            <tr key={code}>
              <th scope="row">{code}</th>
              <td>{meter.used ?? 0}</td>
              <td>{meter.limit ?? '—'}</td>
              <td>{when(meter.resets_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function Sites({ license, reload }: { license: PortalLicense; reload: () => void }) {
  const [error, setError] = useState<ApiFailure | null>(null);
  const [said, setSaid] = useState('');
  const [busy, setBusy] = useState<number | null>(null);
  const { left_today: left, per_day: perDay } = license.self_deactivations;
  const free = async (id: number, site: string) => {
    setError(null);
    setSaid('');
    setBusy(id);
    try {
      const answer = await unwrap(
        api.DELETE('/api/v1/portal/licenses/{license}/activations/{activation}', {
          params: { path: { license: license.id, activation: id } },
        }),
      );
      setSaid(`${site} is free. ${answer.left_today} more can be freed today.`);
      reload();
    } catch (failure) {
      setError(toFailure(failure));
    } finally {
      setBusy(null);
    }
  };
  return (
    <>
      <h3>Sites using {license.title}</h3>
      <p>
        Moved to another site? Free the old one so that the new one can take its place.{' '}
        {perDay === 0
          ? 'Freeing sites here is turned off: ask the vendor.'
          : `${left} of ${perDay} frees left today (more after midnight UTC).`}
      </p>
      <p aria-live="polite" role="status" class="said">
        {said}
      </p>
      <ErrorMessage error={error} />
      {license.activations.length === 0 ? (
        <p>No site has used this license yet.</p>
      ) : (
        <table>
          <caption class="visually-hidden">Sites using {license.title}</caption>
          <thead>
            <tr>
              <th scope="col">Site</th>
              <th scope="col">First seen</th>
              <th scope="col">Last seen</th>
              <th scope="col">
                <Hidden>Action</Hidden>
              </th>
            </tr>
          </thead>
          <tbody>
            {license.activations.map((a) => {
              const site = a.host || a.domain;
              return (
                <tr key={a.id}>
                  <th scope="row">{site}</th>
                  <td>{when(a.first_seen_at)}</td>
                  <td>{when(a.last_seen_at)}</td>
                  <td>
                    <button
                      type="button"
                      disabled={left === 0 || busy !== null}
                      onClick={() => void free(a.id, site)}
                    >
                      Free this site<Hidden> {site}</Hidden>
                    </button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {license.activations_total > license.activations.length ? (
        <p class="muted">
          The {license.activations.length} most recently seen of {license.activations_total} sites are listed.
        </p>
      ) : null}
    </>
  );
}

/** Fetches a token and hands it to the browser as a file: nothing is opened or navigated to. */
function OfflineToken({ license }: { license: PortalLicense }) {
  const [error, setError] = useState<ApiFailure | null>(null);
  const [said, setSaid] = useState('');
  const link = useRef<HTMLAnchorElement>(null);
  const download = async () => {
    setError(null);
    setSaid('');
    try {
      const answer = await unwrap(
        api.GET('/api/v1/portal/licenses/{license}/token', { params: { path: { license: license.id } } }),
      );
      const file = URL.createObjectURL(new Blob([`${answer.token}\n`], { type: 'text/plain' }));
      const a = link.current as HTMLAnchorElement;
      a.href = file;
      a.download = `license-${license.id}.lg1`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(file), 10_000);
      setSaid(`Downloaded license-${license.id}.lg1, valid until ${when(answer.expires_at)}.`);
    } catch (failure) {
      setError(toFailure(failure));
    }
  };
  return (
    <>
      <h3>Offline token</h3>
      <p>
        For a site that cannot reach the license server: the product accepts this signed file instead, until
        it expires.
      </p>
      {license.offline_token.available ? (
        <button type="button" onClick={() => void download()}>
          Download offline token<Hidden> of {license.title}</Hidden>
        </button>
      ) : (
        <p>{license.offline_token.reason}</p>
      )}
      <a ref={link} class="visually-hidden" tabIndex={-1} aria-hidden="true">
        token file
      </a>
      <p aria-live="polite" role="status" class="said">
        {said}
      </p>
      <ErrorMessage error={error} />
    </>
  );
}
