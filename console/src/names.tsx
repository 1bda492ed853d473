// Names for ids: the audit log, a connector's event log and the analytics count resources by id, and
// a vendor reads names. Each resource is asked for once per page (GET of that one resource: no list
// to page through, whatever its id); a resource that is gone says so instead of a bare id. Payment
// connectors are read from their project's list instead: a project has a handful, and the audit log
// names deleted ones often, each of which would be a 404 in the browser's console.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, unwrap } from './api';
import type { ResourceType } from './events';

/** A resource the page shows by id: what it is, its project (for a project's resources), its id. */
export interface Ref {
  kind: ResourceType;
  id: number;
  project?: number | null;
}

export interface Named {
  /** Its name, or "#7 (deleted)" when it is gone (or "#7" when it cannot be read). */
  label: string;
  /** Where it is managed in the console; null when there is no page for it. */
  href: string | null;
}

const refKey = (r: Ref) => `${r.kind}:${r.project ?? ''}:${r.id}`;

/** The id, for a resource that cannot be named: shown after its kind ("domain #7 (deleted)"). */
const fallback = (r: Ref, gone: boolean): Named => ({
  label: `#${r.id}${gone ? ' (deleted)' : ''}`,
  href: null,
});

/** The names of a project's connectors by id, every page of its list. */
async function connectorNames(project: number): Promise<Map<number, string>> {
  const names = new Map<number, string>();
  let cursor: string | undefined;
  do {
    const page = await unwrap(
      api.GET('/api/v1/project/{project}/payment-connectors', {
        params: { path: { project }, query: { per_page: 50, cursor } },
      }),
    );
    for (const c of page.data) names.set(c.id, c.name ?? `${c.provider} connector ${c.id}`);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return names;
}

/** One list per project for the page's lifetime, as useNames asks each resource once. */
type ConnectorLists = Map<number, Promise<Map<number, string>>>;

async function lookUp(r: Ref, connectorLists: ConnectorLists): Promise<Named> {
  const p = r.project ?? null;
  const tab = (name: string) => (p === null ? null : `#/projects/${p}/${name}`);
  try {
    switch (r.kind) {
      case 'project': {
        const x = await unwrap(api.GET('/api/v1/project/{project}', { params: { path: { project: r.id } } }));
        return { label: x.name, href: `#/projects/${r.id}/settings` };
      }
      case 'domain': {
        if (p === null) break;
        const x = await unwrap(
          api.GET('/api/v1/project/{project}/domains/{domain}', {
            params: { path: { project: p, domain: r.id } },
          }),
        );
        return { label: x.domain, href: tab('domains') };
      }
      case 'license': {
        if (p === null) break;
        const x = await unwrap(
          api.GET('/api/v1/project/{project}/licenses/{license}', {
            params: { path: { project: p, license: r.id } },
          }),
        );
        return { label: x.title, href: `#/projects/${p}/licenses/${r.id}` };
      }
      case 'injectable': {
        if (p === null) break;
        const x = await unwrap(
          api.GET('/api/v1/project/{project}/injectables/{injectable}', {
            params: { path: { project: p, injectable: r.id } },
          }),
        );
        return { label: x.title ?? `injectable ${x.id}`, href: tab('injectables') };
      }
      case 'payment_connector': {
        if (p === null) break;
        let list = connectorLists.get(p);
        if (!list) connectorLists.set(p, (list = connectorNames(p)));
        const name = (await list).get(r.id);
        // Absent from the list: deleted ("payment connector #7 (deleted)").
        return name === undefined ? fallback(r, true) : { label: name, href: tab('connectors') };
      }
      case 'customer': {
        if (p === null) break;
        const x = await unwrap(
          api.GET('/api/v1/project/{project}/customers/{customer}', {
            params: { path: { project: p, customer: r.id } },
          }),
        );
        return { label: x.email, href: `#/projects/${p}/customers/${r.id}` };
      }
      case 'webhook_delivery':
        return { label: `#${r.id}`, href: tab('webhooks') };
      default:
        break;
    }
  } catch (error) {
    // A 404 is a resource deleted since; anything else (a scoped key's 403, the network) keeps the id.
    return fallback(r, (error as { status?: number }).status === 404);
  }
  return fallback(r, false);
}

/** The names of `refs`, filled in as they arrive (a ref not yet named is absent from the map). */
export function useNames(refs: Ref[]): Map<string, Named> {
  const [known, setKnown] = useState<Map<string, Named>>(new Map());
  // Asked once while the page is open ("Show more" adds rows, not requests for the rows before).
  const names = useRef(new Map<string, Promise<Named>>()).current;
  const connectorLists = useRef<ConnectorLists>(new Map()).current;
  const wanted = [...new Set(refs.map(refKey))].sort().join(',');
  useEffect(() => {
    let live = true;
    const unique = new Map(refs.map((r) => [refKey(r), r]));
    void Promise.all(
      [...unique].map(async ([key, r]) => {
        let named = names.get(key);
        if (!named) names.set(key, (named = lookUp(r, connectorLists)));
        return [key, await named] as const;
      }),
    ).then((pairs) => live && setKnown(new Map(pairs)));
    return () => {
      live = false;
    };
  }, [wanted]); // `refs` is read through `wanted`, its identity
  return known;
}

/** The name of `r` from `useNames`' map: its name (a link where it has a page), or its id meanwhile. */
export function nameOf(known: Map<string, Named>, r: Ref): Named {
  return known.get(refKey(r)) ?? fallback(r, false);
}

/**
 * A resource by name, linked to where it is managed. Long names are cut by the stylesheet (a table
 * column keeps its width); the title has the whole name.
 */
export function ResourceName({ known, of }: { known: Map<string, Named>; of: Ref }) {
  const n = nameOf(known, of);
  return n.href ? (
    <a class="name" href={n.href} title={n.label}>
      {n.label}
    </a>
  ) : (
    <span class="name" title={n.label}>
      {n.label}
    </span>
  );
}
