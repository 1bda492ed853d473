import { IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';

/** How much of a 2xx answer's body is read before the answer counts as complete. */
const BODY_LIMIT = 64 * 1024;

export interface WebhookAnswer {
  /** The receiver's status code, or null when no answer arrived. */
  status: number | null;
  retryAfter: string | null;
  /** Why the attempt failed, for the delivery log; null on success. */
  error: string | null;
}

/**
 * POSTs one delivery. Success is a 2xx whose body arrives whole (or runs past BODY_LIMIT): a receiver
 * that answers 2xx and then drops the connection mid-body may have crashed before it kept the event,
 * so that attempt fails and is retried with the same webhook-id (see docs/api.md, "Webhooks"). Every step —
 * lookup, connect, answer, body — is within `timeoutMs`. Redirects are not followed.
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
    if (status === null || status < 200 || status >= 300) {
      // The body of a refusal does not matter; closing drops whatever is left of it.
      response.on('error', () => undefined).destroy();
      return { status, retryAfter, error: `HTTP ${status}` };
    }
    let read = 0;
    for await (const chunk of response) {
      read += (chunk as Buffer).length;
      if (read >= BODY_LIMIT) return { status, retryAfter, error: null };
    }
    if (!response.complete) return { status, retryAfter, error: cutOff(status) };
    return { status, retryAfter, error: null };
  } catch (e) {
    if (deadline.signal.aborted) {
      return {
        status,
        retryAfter,
        error: `Timed out after ${init.timeoutMs} ms${status === null ? '' : ` reading the body of its HTTP ${status} answer`}`,
      };
    }
    if (status !== null) return { status, retryAfter, error: cutOff(status) };
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

const cutOff = (status: number) =>
  `HTTP ${status}, but the connection closed before the end of the answer's body (not counted as received)`;
