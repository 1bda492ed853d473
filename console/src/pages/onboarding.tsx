// "Getting started": the steps from an empty account to a first check seen, each ticked from what
// the API says exists (not from what this browser remembers), each linking where it is done. Shown
// on the projects page of a global key that may write, until every step is done (docs/console.md).
import type { ComponentChildren } from 'preact';
import { api, type Project, unwrap } from '../api';
import type { Access } from '../app';
import { useLoad } from '../ui';

/** How far back a first check is looked for: the analytics keep 90 days by default. */
const CHECK_DAYS = 89;

export function Onboarding({ access, newest }: { access: Access; newest: Project | null }) {
  const state = useLoad(async () => {
    if (!newest) return null;
    const path = { project: newest.id };
    const one = { per_page: 1 };
    const [domains, licenses, connectors, analytics] = await Promise.all([
      unwrap(api.GET('/api/v1/project/{project}/domains', { params: { path, query: one } })),
      unwrap(api.GET('/api/v1/project/{project}/licenses', { params: { path, query: one } })),
      unwrap(api.GET('/api/v1/project/{project}/payment-connectors', { params: { path, query: one } })),
      unwrap(
        api.GET('/api/v1/analytics', {
          params: {
            query: { granularity: 'day', from: new Date(Date.now() - CHECK_DAYS * 86_400_000).toISOString() },
          },
        }),
      ),
    ]);
    const t = analytics.totals;
    return {
      domainOrLicense: domains.data.length > 0 || licenses.data.length > 0,
      connector: connectors.data.length > 0,
      checked: t.paid + t.unpaid + t.refused > 0,
    };
  }, [newest?.id]);
  if (newest && !state.data) return null;
  const s = state.data;
  const steps = [true, newest !== null, !!s?.domainOrLicense, !!s?.connector, !!s?.checked];
  if (steps.every(Boolean)) return null;
  const p = newest ? `#/projects/${newest.id}` : null;
  return (
    <section class="box onboarding" aria-labelledby="onboarding-h">
      <h2 id="onboarding-h">Getting started</h2>
      <p>
        {steps.filter(Boolean).length} of {steps.length} steps done. Each is ticked from what exists, so this
        list goes away once a first check has been answered.
      </p>
      <ol>
        <Step done={steps[0]} title="Create an API key">
          {access.session.kind === 'key' ? (
            <>
              You are signed in with <code>{access.session.me.prefix}…</code>.{' '}
            </>
          ) : null}
          Keys (read-only, or for one project) are made under <a href="#/api-keys">API keys</a>.
        </Step>
        <Step done={steps[1]} title="Create a project">
          A project is a product you sell; its domains and licenses are what the gate checks.{' '}
          {newest ? `The newest is ${newest.name}; the steps below are its.` : 'Fill in New project below.'}
        </Step>
        <Step done={steps[2]} title="Add a domain or a license">
          A license key is what a customer&apos;s site sends. A license billed by its project (the default)
          answers with the paid flag of the domain the site calls from: register that host (
          <code>shop.example.com</code>, say) and mark the domain paid, or the check answers &ldquo;Domain is
          not registered under this project&rdquo;. A license billed on its own (billing
          &ldquo;license&rdquo;, as payment connectors issue them) answers with its own paid flag, from any
          site.{' '}
          {p ? (
            <>
              <a href={`${p}/domains`}>Domains</a> · <a href={`${p}/licenses`}>Licenses</a>
            </>
          ) : (
            'After the project.'
          )}
        </Step>
        <Step done={steps[3]} title="Connect a payment provider">
          Stripe, Paddle, Lemon Squeezy, Polar or Standard Webhooks mark it paid or unpaid, or issue a license
          per order. {p ? <a href={`${p}/connectors`}>Payment connectors</a> : 'After the project.'}
        </Step>
        <Step done={steps[4]} title="See a first check">
          A site (or the SDK) sends a license key to <code>POST /api/v1/project/has-paid</code>; its answer
          shows in the analytics within seconds.{' '}
          {p ? <a href={`${p}/analytics`}>The project’s analytics</a> : 'After a license.'}
        </Step>
      </ol>
    </section>
  );
}

function Step({ done, title, children }: { done: boolean; title: string; children: ComponentChildren }) {
  return (
    <li class={done ? 'done' : undefined}>
      <strong>
        <span aria-hidden="true" class="tick">
          {done ? '✓' : '○'}
        </span>{' '}
        {title}
      </strong>{' '}
      <span class="state">({done ? 'done' : 'to do'})</span>
      <br />
      {children}
    </li>
  );
}
