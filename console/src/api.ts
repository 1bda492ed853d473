// The console talks to the API only through this client, generated from openapi.json
// (generated/openapi.d.ts, `npm run openapi:types`): paths, parameters and bodies are typed.
import createClient from 'openapi-fetch';
import type { components, paths } from '../../generated/openapi';

export type Schemas = components['schemas'];
export type Project = Schemas['Project'];
export type Domain = Schemas['Domain'];
export type License = Schemas['License'];
export type Plan = Schemas['Plan'];
export type Injectable = Schemas['InjectableListItem'];
export type ApiKey = Schemas['ApiKey'];
export type AuditEvent = Schemas['AuditEvent'];
export type Delivery = Schemas['WebhookDelivery'];
export type Activation = Schemas['Activation'];
export type Usage = Schemas['LicenseUsage'];
export type Customer = Schemas['Customer'];
export type Subscription = Schemas['Subscription'];
export type Member = Schemas['Member'];
export type Invitation = Schemas['Invitation'];
export type SignedInUser = Schemas['Session'];
export type SignInOptions = Schemas['SignInOptions'];
export type Role = Member['role'];

/** 422 field errors: each invalid field with its messages. */
export type FieldErrors = Record<string, string[]>;

/** An error answer: the envelope's message, and its field errors when the status is 422. */
export class ApiFailure extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly fields: FieldErrors = {},
  ) {
    super(message);
  }
}

let apiKey: string | null = null;
export const setApiKey = (key: string | null) => {
  apiKey = key;
};

/** The session's CSRF token: a person signed in with the lg_session cookie sends it on every write. */
let csrfToken: string | null = null;
export const setCsrfToken = (token: string | null) => {
  csrfToken = token;
};
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Same origin: the console is served by the service it manages. */
export const api = createClient<paths>({ baseUrl: '', headers: { Accept: 'application/json' } });
api.use({
  onRequest({ request }) {
    if (apiKey) request.headers.set('X-API-KEY', apiKey);
    else if (csrfToken && !READS.has(request.method)) request.headers.set('X-CSRF-Token', csrfToken);
    return request;
  },
});

interface Answer<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

/** The payload of a success envelope (its `data`). */
type Payload<D> = D extends { data: infer T } ? T : never;

/** The `data` of a success envelope, or an ApiFailure with the error envelope's message and field errors. */
export async function unwrap<D>(call: Promise<Answer<D>>): Promise<Payload<D>> {
  let answer: Answer<D>;
  try {
    answer = await call;
  } catch {
    throw new ApiFailure('The service could not be reached: check the connection and try again.', 0);
  }
  if (answer.error !== undefined || !answer.response.ok) {
    const body = (answer.error ?? {}) as { message?: unknown; errors?: unknown };
    const message =
      typeof body.message === 'string' ? body.message : `The service answered ${answer.response.status}.`;
    const fields =
      answer.response.status === 422 && body.errors && typeof body.errors === 'object'
        ? (body.errors as FieldErrors)
        : {};
    throw new ApiFailure(message, answer.response.status, fields);
  }
  return (answer.data as { data: Payload<D> }).data;
}

/** A cursor list's page. */
export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}
