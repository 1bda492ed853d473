import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';

export const API_KEY_SCHEME = 'api-key';
export const LICENSE_KEY_SCHEME = 'license-key';

export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('LicenseGate')
    .setDescription(
      'Licensing and payment-gate service. Every response is the envelope {status, message, data, errors}. ' +
        'Management endpoints take X-API-KEY; runtime endpoints take X-LICENSE-KEY.',
    )
    .setVersion('1')
    .addApiKey({ type: 'apiKey', in: 'header', name: 'X-API-KEY', description: 'Global or project-scoped API key' }, API_KEY_SCHEME)
    .addApiKey({ type: 'apiKey', in: 'header', name: 'X-LICENSE-KEY', description: 'License key (the license uuid)' }, LICENSE_KEY_SCHEME)
    .build();
  return SwaggerModule.createDocument(app, config);
}

export function setupSwagger(app: INestApplication): void {
  SwaggerModule.setup('api/docs', app, () => buildOpenApiDocument(app), {
    jsonDocumentUrl: 'api/docs-json',
    useGlobalPrefix: false,
  });
}
