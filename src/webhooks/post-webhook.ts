import { IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';

export interface WebhookAnswer {
  /** The receiver's status code, or null when no answer arrived. */
  status: number | null;
  retryAfter: string | null;
  /** Why the attempt failed, for the delivery log; null on success. */
  error: string | null;
}

/**
 * POSTs one delivery. The status decides, as Stripe and Standard Webhooks judge it: a 2xx is success
 * the moment its status line arrives, whatever becomes of the body after it (a receiver that answers
 * `200 OK` and drops the connection has said it kept the event; docs/decisions.md#webhooks). The body
 * is never read. Every step — lookup, connect, answer — is within `timeoutMs`. Redirects are not
 * followed.
 */
export async function postWebhook(
  url: URL,
  init: { headers: Record<string, string>; body: string; timeoutMs: number; lookup: LookupFunction },
): Promise<WebhookAnswer> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), init.timeoutMs);
  let status: number | null = null;
  let retryAfter: string | null = null;
  try {
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const https = url.protocol === 'https:';
      const request = (https ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        headers: { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) },
        // A connection of its own, opened through `lookup` and closed after the answer.
        agent: false,
        lookup: init.lookup,
        signal: deadline.signal,
      });
      // `on`, not `once`: the request may error again after the answer (the deadline, a reset).
      request.on('response', resolve).on('error', reject).end(init.body);
    });
    status = response.statusCode ?? null;
    const header = response.headers['retry-after'];
    retryAfter = typeof header === 'string' ? header : null;
    // The body does not matter either way; closing drops whatever is left of it.
    response.on('error', () => undefined).destroy();
    if (status === null || status < 200 || status >= 300)
      return { status, retryAfter, error: `HTTP ${status}` };
    return { status, retryAfter, error: null };
  } catch (e) {
    if (deadline.signal.aborted) return { status, retryAfter, error: `Timed out after ${init.timeoutMs} ms` };
    const error = e as NodeJS.ErrnoException;
    if (error.code === 'ERR_WEBHOOK_PRIVATE_ADDRESS') return { status, retryAfter, error: error.message };
    return {
      status,
      retryAfter,
      error: `${error.message}${error.code && !error.message.includes(error.code) ? ` (${error.code})` : ''}`,
    };
  } finally {
    clearTimeout(timer);
  }
}
