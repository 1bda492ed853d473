import { describe, expect, it } from '@jest/globals';
import type { OpenAPIObject } from '@nestjs/swagger';
import { DERIVE, deriveOperationIds, resourceName, singular } from './operation-ids.js';

type Shape = 'item' | 'list' | 'none';

/** A document of routes as Nest generates them (`derive:` ids), answering an item, a cursor list or nothing. */
function documentOf(routes: Array<[string, string, Shape?, string?]>): OpenAPIObject {
  const data = {
    item: { $ref: '#/components/schemas/Thing' },
    list: {
      type: 'object',
      properties: {
        data: { type: 'array', items: { $ref: '#/components/schemas/Thing' } },
        next_cursor: { type: 'string', nullable: true },
      },
    },
    none: { type: 'object', nullable: true },
  };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [method, path, shape = 'item', explicit] of routes) {
    paths[path] ??= {};
    paths[path][method] = {
      operationId: explicit ?? `${DERIVE}SomeController.someMethod`,
      responses: {
        [method === 'post' && shape !== 'none' ? '201' : '200']: {
          content: {
            'application/json': {
              schema: {
                allOf: [
                  { $ref: '#/components/schemas/SuccessEnvelope' },
                  { properties: { data: data[shape] } },
                ],
              },
            },
          },
        },
      },
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 't', version: '1' },
    paths,
    components: { schemas: { Thing: { type: 'object' } } },
  };
}

function idsOf(routes: Array<[string, string, Shape?, string?]>): Record<string, string> {
  const doc = documentOf(routes);
  deriveOperationIds(doc);
  const out: Record<string, string> = {};
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item))
      out[`${method.toUpperCase()} ${path}`] = (op as { operationId: string }).operationId;
  return out;
}

describe('operationIds derived from the method and the path', () => {
  it('names the REST shapes: list, create, get, update, replace, delete, actions and details', () => {
    expect(
      idsOf([
        ['get', '/api/v1/project', 'list'],
        ['post', '/api/v1/project'],
        ['get', '/api/v1/project/{project}'],
        ['patch', '/api/v1/project/{project}'],
        ['put', '/api/v1/project/{project}'],
        ['delete', '/api/v1/project/{project}', 'none'],
        ['post', '/api/v1/project/{project}/lock'],
        ['get', '/api/v1/project/{project}/signing-key'],
        ['get', '/api/v1/project/{project}/licenses', 'list'],
        ['post', '/api/v1/project/{project}/licenses'],
        ['get', '/api/v1/project/{project}/licenses/{license}'],
        ['post', '/api/v1/project/{project}/licenses/{license}/revoke'],
        ['get', '/api/v1/project/{project}/licenses/{license}/usage'],
        ['get', '/api/v1/project/{project}/webhook-deliveries', 'list'],
        ['post', '/api/v1/project/{project}/webhook-deliveries/{delivery}/retry'],
        ['get', '/api/v1/api-keys', 'list'],
        ['delete', '/api/v1/api-keys/{id}'],
        ['get', '/api/v1/health'],
        ['get', '/api/v1'],
        ['get', '/metrics'],
      ]),
    ).toEqual({
      'GET /api/v1/project': 'listProjects',
      'POST /api/v1/project': 'createProject',
      'GET /api/v1/project/{project}': 'getProject',
      'PATCH /api/v1/project/{project}': 'updateProject',
      'PUT /api/v1/project/{project}': 'replaceProject',
      'DELETE /api/v1/project/{project}': 'deleteProject',
      'POST /api/v1/project/{project}/lock': 'lockProject',
      'GET /api/v1/project/{project}/signing-key': 'getProjectSigningKey',
      'GET /api/v1/project/{project}/licenses': 'listLicenses',
      'POST /api/v1/project/{project}/licenses': 'createLicense',
      'GET /api/v1/project/{project}/licenses/{license}': 'getLicense',
      'POST /api/v1/project/{project}/licenses/{license}/revoke': 'revokeLicense',
      'GET /api/v1/project/{project}/licenses/{license}/usage': 'getLicenseUsage',
      'GET /api/v1/project/{project}/webhook-deliveries': 'listWebhookDeliveries',
      'POST /api/v1/project/{project}/webhook-deliveries/{delivery}/retry': 'retryWebhookDelivery',
      'GET /api/v1/api-keys': 'listApiKeys',
      'DELETE /api/v1/api-keys/{id}': 'deleteApiKey',
      'GET /api/v1/health': 'getHealth',
      'GET /api/v1': 'getRoot',
      'GET /metrics': 'getMetrics',
    });
  });

  it('names routes without naming them one by one: activations, the audit log, key rotation, self-service deactivation', () => {
    expect(
      idsOf([
        ['get', '/api/v1/project/{project}/licenses/{license}', 'item'],
        ['get', '/api/v1/project/{project}/licenses/{license}/activations', 'list'],
        ['delete', '/api/v1/project/{project}/licenses/{license}/activations/{activation}', 'none'],
        ['get', '/api/v1/audit-log', 'list'],
        ['get', '/api/v1/project/{project}/audit-log', 'list'],
        ['post', '/api/v1/api-keys/{id}/roll'],
        ['post', '/api/v1/license/deactivate', 'item'],
      ]),
    ).toEqual({
      'GET /api/v1/project/{project}/licenses/{license}': 'getLicense',
      'GET /api/v1/project/{project}/licenses/{license}/activations': 'listActivations',
      'DELETE /api/v1/project/{project}/licenses/{license}/activations/{activation}': 'deleteActivation',
      // The same name twice: the nested one says what it is nested in.
      'GET /api/v1/audit-log': 'listAuditLog',
      'GET /api/v1/project/{project}/audit-log': 'listProjectAuditLog',
      'POST /api/v1/api-keys/{id}/roll': 'rollApiKey',
      'POST /api/v1/license/deactivate': 'deactivateLicense',
    });
  });

  it('keeps an operationId given with @ApiOperation, and the rule steps around it', () => {
    expect(
      idsOf([
        ['post', '/api/v1/project/has-paid', 'item', 'checkHasPaid'],
        ['get', '/api/v1/things', 'list', 'listThings'],
        ['get', '/api/v1/project/{project}/things', 'list'],
      ]),
    ).toEqual({
      'POST /api/v1/project/has-paid': 'checkHasPaid',
      'GET /api/v1/things': 'listThings',
      'GET /api/v1/project/{project}/things': 'listProjectThings',
    });
  });

  it('fails, naming both, when two operations would still share a name', () => {
    const doc = documentOf([
      ['get', '/api/v1/things/{thing}'],
      ['get', '/api/v1/other/{id}', 'item', 'getThing'],
    ]);
    expect(() => deriveOperationIds(doc)).toThrow(
      'OpenAPI: GET /api/v1/things/{thing} and GET /api/v1/other/{id} are both named getThing; give one an operationId with @ApiOperation({ operationId }).',
    );
  });

  it('singularises and names the resources of paths', () => {
    expect(
      ['licenses', 'webhook-deliveries', 'api-keys', 'project', 'activations', 'addresses', 'status'].map(
        singular,
      ),
    ).toEqual(['license', 'webhook-delivery', 'api-key', 'project', 'activation', 'address', 'status']);
    expect(['webhook-deliveries', 'api-keys', 'licenses', 'audit-log'].map(resourceName)).toEqual([
      'Webhook delivery',
      'API key',
      'License',
      'Audit log',
    ]);
  });
});
