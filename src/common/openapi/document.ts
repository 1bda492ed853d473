import { INestApplication } from '@nestjs/common';
import {
  DocumentBuilder,
  OpenAPIObject,
  SwaggerModule,
  type OperationObject,
  type PathItemObject,
  type ResponseObject,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE, CORS_METHODS } from '../http/cors.js';
import { defaultErrorExample, errorEnvelope } from './error-examples.js';
import { API_KEY_SCHEME, BODIES_EXTENSION, LICENSE_KEY_SCHEME, PORTAL_SCHEME } from './decorators.js';
import { requiredRole } from '../../auth/roles.js';
import { SESSION_SCHEME } from '../../auth/session.guard.js';
import { DERIVE, deriveOperationIds } from './operation-ids.js';
import { REQUEST_ID_HEADER } from './envelopes.js';

/*
 * The OpenAPI document: generated from the controllers' decorators, then completed with what every
 * route shares (operationIds, security, error examples), so that a route gets them without naming
 * them. `npm run openapi` writes it to openapi.json; /api/docs-json serves the same bytes.
 */

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
export const DOCS_PATH = '/api/docs';
export const DOCUMENT_PATH = '/api/docs-json';
/** Swagger UI's Content-Security-Policy: the console's, but with inline styles, which the UI needs. */
export const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

const list = (values: string[]) => values.map((v) => `\`${v}\``).join(', ');

const DESCRIPTION = `Licensing and payment-gate service.

- **Envelope.** Every answer is \`{status, message, data, errors}\`: \`status\` is \`success\` or \`error\`; 422 \`errors\` maps each invalid field to its messages. Every answer carries \`X-Request-Id\` (echoed when the request sends a sane one).
- **Credentials.** Management operations take an API key in \`X-API-KEY\`; runtime operations (the has-paid check, the injectable stream) take a license key in \`X-LICENSE-KEY\`. A missing key → 401; an invalid, revoked or expired one → 403.
- **Methods.** A path answers the methods listed for it. Any other method on a known path → 405 in the envelope, with an \`Allow\` header listing the methods it takes; an unknown path → 404.
- **Cross-origin calls (CORS).** Browsers may call every operation from any origin (\`CORS_ORIGINS\`, default \`*\`). A preflight — \`OPTIONS\` on any path, with \`Origin\` and \`Access-Control-Request-Method\` — is answered 204 with \`Access-Control-Allow-Methods: ${CORS_METHODS.join(',')}\`, \`Access-Control-Allow-Headers: ${CORS_ALLOWED_HEADERS.join(',')}\` and \`Access-Control-Max-Age: ${CORS_MAX_AGE}\`; answers expose ${list(CORS_EXPOSED_HEADERS)}. Credentials travel in headers, never cookies.
- **Rate limits.** 429 with \`Retry-After\` (seconds).
- **Cursor lists** answer \`data: {data: [...], next_cursor}\`; pass \`next_cursor\` back as \`cursor\`.

This document: \`${DOCUMENT_PATH}\` (the same bytes as \`openapi.json\` in the repository); Swagger UI: \`${DOCS_PATH}\`.`;

export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('LicenseGate')
    .setDescription(DESCRIPTION)
    .setVersion('1')
    .setLicense('MIT', 'https://opensource.org/license/mit')
    // Self-hosted: the server is wherever it runs; the defaults are `npm start`'s.
    .addServer('{scheme}://{host}', 'Your LicenseGate server (`npm start` serves http://localhost:3000)', {
      scheme: { default: 'http', enum: ['http', 'https'] },
      host: { default: 'localhost:3000', description: 'Host name and port' },
    })
    .addApiKey(
      { type: 'apiKey', in: 'header', name: 'X-API-KEY', description: 'Global or project-scoped API key' },
      API_KEY_SCHEME,
    )
    .addApiKey(
      { type: 'apiKey', in: 'header', name: 'X-LICENSE-KEY', description: 'License key (the license uuid)' },
      LICENSE_KEY_SCHEME,
    )
    .addCookieAuth(
      'lg_session',
      {
        type: 'apiKey',
        in: 'cookie',
        name: 'lg_session',
        description:
          'A signed-in session (POST /api/v1/auth/login); every POST, PUT, PATCH and DELETE made with it also sends X-CSRF-Token (the csrf_token of GET /api/v1/auth/me)',
      },
      SESSION_SCHEME,
    )
    .addCookieAuth(
      'lg_portal',
      {
        type: 'apiKey',
        in: 'cookie',
        name: 'lg_portal',
        description:
          'The customer portal (docs/portal.md): set by opening a link of POST /api/v1/project/{project}/portal-sessions, for an hour; named __Host-lg_portal when PUBLIC_URL is https. Every write made with it also sends X-CSRF-Token (the csrf_token of GET /api/v1/portal/session). API keys and console sessions open nothing under /api/v1/portal',
      },
      PORTAL_SCHEME,
    )
    .build();
  const generated = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controller, method) => `${DERIVE}${controller}.${method}`,
  });
  // Operations share the objects of class-level decorators: a copy that shares nothing (structuredClone
  // would keep the sharing), so that each is completed alone.
  const document = JSON.parse(JSON.stringify(generated)) as OpenAPIObject;
  document.paths[DOCUMENT_PATH] = documentPath();
  complete(document);
  requiredRoles(document);
  return document;
}

/** The document as openapi.json holds it: keys sorted, two-space indents, a final newline. */
export function serializeOpenApiDocument(document: OpenAPIObject): string {
  return `${JSON.stringify(sortKeys(document), null, 2)}\n`;
}

/** Swagger UI at /api/docs, and the document at /api/docs-json, byte for byte as `npm run openapi` writes it. */
export function setupSwagger(app: INestApplication): void {
  let document: OpenAPIObject | undefined;
  let text: string | undefined;
  const built = () => (document ??= buildOpenApiDocument(app));
  // Swagger UI's page carries an inline <style> and style attributes, nothing else inline; it loads
  // only its own files, and is framed by nobody (clickjacking a "Try it out" with a pasted key).
  app.use(DOCS_PATH, (_req: Request, res: Response, next: () => void) => {
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    res.setHeader('X-Frame-Options', 'DENY');
    next();
  });
  SwaggerModule.setup(DOCS_PATH.slice(1), app, built, {
    raw: false,
    useGlobalPrefix: false,
    // "Try it out" goes to the server showing the page, wherever it runs; the servers of the document
    // stay as committed.
    patchDocumentOnRequest: (_req, _res, doc) => ({
      ...doc,
      servers: [{ url: '/', description: 'This server' }, ...(doc.servers ?? [])],
    }),
  });
  app
    .getHttpAdapter()
    .get(DOCUMENT_PATH, (_req: Request, res: Response) =>
      res.type('application/json').send((text ??= serializeOpenApiDocument(built()))),
    );
}

/** The path item of the document itself. */
function documentPath(): PathItemObject {
  return {
    get: {
      tags: ['docs'],
      summary: 'This OpenAPI document',
      description: `The same bytes as \`openapi.json\` in the repository. Swagger UI, for people: \`${DOCS_PATH}\`.`,
      operationId: 'getOpenApiDocument',
      responses: {
        200: {
          description: 'The OpenAPI 3.0 document',
          headers: REQUEST_ID_HEADER,
          content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
        },
        // A fixed, public path: its one client error is a malformed request (its example follows the rules).
        400: {
          description: 'HTTP/1.1 without a Host header, or another malformed request',
          headers: REQUEST_ID_HEADER,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
        },
      },
    },
  };
}

/**
 * `x-required-role` on every operation a member may call: the least role, read from the same table
 * the guard reads (auth/roles.ts), so that the document cannot say one thing and the guard do another.
 */
function requiredRoles(document: OpenAPIObject): void {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op?.security?.some((requirement) => API_KEY_SCHEME in requirement))
        (op as unknown as Record<string, unknown>)['x-required-role'] = requiredRole(
          `${method.toUpperCase()} ${path}`,
        );
    }
  }
}

/** What every operation shares, filled in where the controllers left it out. */
function complete(document: OpenAPIObject): void {
  delete document.info.contact;
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      // No credentials is stated, not left to a default (health, metrics, the root, the docs).
      op.security ??= [];
      bodiesPerMediaType(op);
      errorExamples(document, path, op);
    }
  }
  deriveOperationIds(document);
  pruneSchemas(document);
}

/** ApiBodies: each media type its own schema. */
function bodiesPerMediaType(op: OperationObject): void {
  const extended = op as OperationObject & { [BODIES_EXTENSION]?: Record<string, string> };
  const bodies = extended[BODIES_EXTENSION];
  if (!bodies) return;
  delete extended[BODIES_EXTENSION];
  if (!op.requestBody || '$ref' in op.requestBody)
    throw new Error(`OpenAPI: ${op.summary}: ApiBodies on an operation without a body`);
  op.requestBody.content = Object.fromEntries(
    Object.entries(bodies).map(([mediaType, $ref]) => [mediaType, { schema: { $ref } }]),
  );
}

function errorExamples(document: OpenAPIObject, path: string, op: OperationObject): void {
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    const media = (response as ResponseObject).content?.['application/json'];
    if (Number(status) < 400 || !media || media.example !== undefined || media.examples !== undefined)
      continue;
    const example = defaultErrorExample(document, path, op, Number(status));
    if (!example) {
      throw new Error(
        `OpenAPI: no example for ${status} of ${op.summary}: give it one with ApiErrors({ status: ${status}, message })`,
      );
    }
    media.example = errorEnvelope(
      Number(status),
      example,
      JSON.stringify(media.schema).includes('RefusalEnvelope'),
    );
  }
}

/** Schemas nothing refers to any more (a @Body() type that ApiBodies replaced). */
function pruneSchemas(document: OpenAPIObject): void {
  const schemas = document.components?.schemas ?? {};
  const used = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string' && inner.startsWith('#/components/schemas/')) {
        const name = inner.slice('#/components/schemas/'.length);
        if (!used.has(name)) {
          used.add(name);
          visit(schemas[name]);
        }
      } else visit(inner);
    }
  };
  visit(document.paths);
  for (const name of Object.keys(schemas)) if (!used.has(name)) delete schemas[name];
}

/** Objects with their keys sorted, recursively; arrays keep their order (it carries meaning). */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}
