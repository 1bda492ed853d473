import { applyDecorators, Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { ApiEnvelope, ApiErrors, DATABASE_AWAY } from '../common/openapi/decorators.js';
import { PaymentReceiptResponse } from './dto/payment-connector.response.js';
import { PAYMENT_PROVIDERS, PROVIDERS } from './providers/registry.js';
import {
  CONNECTOR_NOT_FOUND,
  DeliveryOrigin,
  PaymentReceipts,
  Receipt,
  SIGNATURE_INVALID,
} from './payment-receipt.service.js';

/** Every provider's signature headers, once each, with the providers that send it (polar, standard: webhook-*). */
const SignatureHeaders = () => {
  const senders = new Map<string, { providers: string[]; description: string }>();
  for (const provider of PAYMENT_PROVIDERS)
    for (const { name, description } of provider.signatureHeaders) {
      const entry = senders.get(name) ?? { providers: [], description };
      entry.providers.push(provider.name);
      senders.set(name, entry);
    }
  return applyDecorators(
    ...[...senders].map(([name, { providers, description }]) =>
      ApiHeader({ name, required: false, description: `${providers.join(', ')}: ${description}` }),
    ),
  );
};

/** Where a request comes from, for the audit rows of what its event changes. */
export const deliveryOrigin = (req: Request & { id?: string }): DeliveryOrigin => ({
  request_id: req.id ?? null,
  ip: req.ip ?? null,
  user_agent: req.headers['user-agent']?.slice(0, 512) ?? null,
});

/** The largest event accepted (the raw body is read before anything else: app.setup.ts). */
export const MAX_PAYMENT_EVENT_BYTES = 1024 * 1024;

/**
 * Where payment providers send their events (docs/payments.md). No API key: the provider's signature
 * over the raw body is the authentication. Limited per address with the runtime's limits
 * (THROTTLE_RUNTIME_LIMIT, 6000 a minute by default): far above any provider's bursts, still a bound
 * on a flood of forgeries.
 */
@ApiTags('payments')
@ThrottleAs('payments')
@Controller('payments')
export class PaymentWebhooksController {
  constructor(private readonly receipts: PaymentReceipts) {}

  @Post(':provider/:token')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'receivePaymentEvent',
    summary: "Receive a payment provider's event",
    description:
      "The connector's endpoint_url. The signature (the provider's headers below) is checked over the raw body before it is parsed; timestamps more than 300 s from now are refused. 200 only once the event and its effects are stored; a redelivery answers `duplicate`.",
    security: [],
  })
  @SignatureHeaders()
  @ApiParam({ name: 'provider', enum: PROVIDERS })
  @ApiParam({ name: 'token', description: "The token of the connector's endpoint_url" })
  @ApiBody({
    required: true,
    schema: {
      type: 'object',
      additionalProperties: true,
      description: "The provider's event, any content type",
    },
  })
  @ApiEnvelope(PaymentReceiptResponse, {
    description: 'Stored: applied, ignored (with the reason in the event log), or a duplicate',
  })
  @ApiErrors(
    {
      status: 400,
      description:
        'A body that is not a JSON object or not UTF-8 text (an unpaired surrogate included), or an event without an id (after a valid signature)',
      message: 'The event body must be a JSON object.',
    },
    {
      status: 401,
      description: 'Missing or invalid signature, or a timestamp more than 300 s from now',
      message: `${SIGNATURE_INVALID}: the Stripe-Signature header is missing.`,
    },
    {
      status: 404,
      description: 'Unknown token, a token of another provider, or an inactive connector',
      message: CONNECTOR_NOT_FOUND,
    },
    { status: 413, description: 'The body is larger than 1 MiB' },
    429,
    500,
    DATABASE_AWAY,
  )
  receive(
    @Param('provider') provider: string,
    @Param('token') token: string,
    @Req() req: Request & { id?: string },
  ): Promise<Receipt> {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    return this.receipts.receive(provider, token, req.headers, body, deliveryOrigin(req));
  }
}
