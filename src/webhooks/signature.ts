import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing (docs/decisions.md#webhooks): v1,<base64 HMAC-SHA256(key, id.timestamp.body)>, where the key
 * is the base64 part after `whsec_` when the secret has that prefix, else the secret's UTF-8 bytes.
 */
export function webhookSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = secret.startsWith('whsec_')
    ? Buffer.from(secret.slice('whsec_'.length), 'base64')
    : Buffer.from(secret, 'utf8');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}
