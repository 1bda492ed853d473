import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Observable } from 'rxjs';
import type { AuthedRequest } from '../auth/principal.js';

/** Who made a management write, as its audit row names them. */
export interface Actor {
  type: 'api_key' | 'cli' | 'license' | 'payment' | 'user' | 'portal';
  api_key_id: number | null;
  api_key_prefix: string | null;
  user_id: number | null;
  /** A payment provider's event (type `payment`): the provider and the connector that received it. */
  provider?: string | null;
  connector_id?: number | null;
  /** A buyer in the customer portal (type `portal`): their customer, or null for a portal opened on one license. */
  customer_id?: number | null;
}

/** The actor and the request a write is made in: what its audit row records besides the change. */
export interface AuditContext {
  actor: Actor;
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
}

/*
 * The audit context travels with the work it belongs to (AsyncLocalStorage), so that the one place
 * every management write passes through (AuditLog.record, inside the write's unit of work) knows who
 * is writing without every service being handed the request. It is set where writes enter: the
 * routes of ApiKeyAuth (AuditContextInterceptor), the CLI (CLI_CONTEXT), and a license holder's
 * self-service routes (the same interceptor, named on the route).
 */
const storage = new AsyncLocalStorage<AuditContext>();

/** Runs `work` with `context` as the audit context of every write it makes. */
export function inAuditContext<T>(context: AuditContext, work: () => T): T {
  return storage.run(context, work);
}

/** The audit context of the running work, or undefined outside a request or the CLI. */
export function currentAuditContext(): AuditContext | undefined {
  return storage.getStore();
}

/** The admin CLI: an operator at the server, with no key and no request. */
export const CLI_CONTEXT: AuditContext = {
  actor: { type: 'cli', api_key_id: null, api_key_prefix: null, user_id: null },
  request_id: null,
  ip: null,
  user_agent: null,
};

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const MAX_USER_AGENT = 512;

/**
 * Runs a write route's handler in the audit context of its request: the API key or session that
 * ApiKeyGuard admitted, or else the license that LicenseKeyGuard admitted (`req.runtime`). Reads write nothing
 * and pass straight through.
 */
@Injectable()
export class AuditContextInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context
      .switchToHttp()
      .getRequest<Request & AuthedRequest & { id?: string; runtime?: unknown }>();
    if (SAFE_METHODS.has(req.method)) return next.handle();
    const key = req.principal?.key;
    const member = req.principal?.member;
    const actor: Actor = key
      ? { type: 'api_key', api_key_id: key.id, api_key_prefix: key.prefix, user_id: key.user_id }
      : member
        ? { type: 'user', api_key_id: null, api_key_prefix: null, user_id: member.user.id }
        : { type: 'license', api_key_id: null, api_key_prefix: null, user_id: null };
    const audit: AuditContext = {
      actor,
      request_id: req.id ?? null,
      ip: clientAddress(req.ip),
      user_agent: req.headers['user-agent']?.slice(0, MAX_USER_AGENT) ?? null,
    };
    // Subscribing inside the context runs the handler, and everything it awaits, in it.
    return new Observable((subscriber) => inAuditContext(audit, () => next.handle().subscribe(subscriber)));
  }
}

/** `::ffff:a.b.c.d` is the IPv4 address a.b.c.d, as every address rule reads it. */
export function clientAddress(ip: string | undefined): string | null {
  if (!ip) return null;
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}
