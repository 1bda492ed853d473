import { createHmac } from 'node:crypto';

/**
 * The HMAC key of a Standard Webhooks secret: the base64 part after `whsec_` when the secret has that
 * prefix, else the secret's UTF-8 bytes (Polar's secrets, which its SDK encodes the same way).
 */
export function standardWebhookKey(secret: string): Buffer {
  return secret.startsWith('whsec_')
    ? Buffer.from(secret.slice('whsec_'.length), 'base64')
    : Buffer.from(secret, 'utf8');
}

/**
 * Standard Webhooks signing (docs/decisions.md#webhooks): v1,<base64 HMAC-SHA256(key, id.timestamp.body)>,
 * with the key of standardWebhookKey().
 */
export function webhookSignature(
  secret: string,
  id: string,
  timestamp: number,
  body: string | Buffer,
): string {
  return `v1,${createHmac('sha256', standardWebhookKey(secret)).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}
