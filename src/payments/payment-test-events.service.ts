import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { openSecret } from '../common/crypto/crypto.js';
import { ApiError } from '../common/http/errors.js';
import { Clock } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { PaymentConnectorEntity } from './payment-connector.entity.js';
import { PaymentEventEntity } from './payment-event.entity.js';
import { DeliveryOrigin, PaymentReceipts } from './payment-receipt.service.js';
import type { PaymentProvider } from './providers/provider.js';
import { providerNamed } from './providers/registry.js';

/** What a test event did: what the provider would have been answered, and the event log's line. */
export interface TestEventResult {
  event_id: string;
  event_type: string;
  /** The status the connector's endpoint answered. */
  http_status: number;
  /** null when the endpoint refused the event (http_status 4xx): nothing was stored. */
  outcome: 'applied' | 'ignored' | 'duplicate' | 'stale' | null;
  detail: string;
}

export const CONNECTOR_PAUSED =
  'The connector is paused (is_active is false): its endpoint answers 404 to every event, this one too.';

/**
 * "Send a test event" (docs/payments.md#send-a-test-event): the provider adapter's sample event,
 * signed with the connector's own secret by the adapter's sign, handed to PaymentReceipts.receive,
 * the function the webhook route calls, with the connector's own provider and token. In process rather
 * than over loopback HTTP: this server may not reach itself at PUBLIC_URL (a proxy, TLS, a cluster)
 * nor know its listening address, and the route's own steps before receive are reading the raw body,
 * which a Buffer made here already is.
 */
@Injectable()
export class PaymentTestEvents {
  constructor(
    @InjectRepository(PaymentConnectorEntity)
    private readonly connectors: Repository<PaymentConnectorEntity>,
    @InjectRepository(PaymentEventEntity) private readonly events: Repository<PaymentEventEntity>,
    private readonly receipts: PaymentReceipts,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  async send(connector: PaymentConnectorEntity, origin: DeliveryOrigin): Promise<TestEventResult> {
    const adapter = providerNamed(connector.provider) as PaymentProvider;
    const sealed = await this.connectors
      .createQueryBuilder('c')
      .select(['c.id', 'c.signing_secret'])
      .where('c.id = :id', { id: connector.id })
      .getOneOrFail();
    const secret = openSecret(this.config.appKey, sealed.signing_secret);
    const token = openSecret(this.config.appKey, connector.token_sealed);
    const now = this.clock.nowMs();
    const payload = adapter.sampleEvent(new Date(now));
    const body = Buffer.from(JSON.stringify(payload));
    // Node hands a route its headers in lower case: so does this.
    const headers = Object.fromEntries(
      Object.entries(adapter.sign(secret, body, now)).map(([name, value]) => [name.toLowerCase(), value]),
    );
    const verified = adapter.verify(secret, headers, body, now);
    const sent = adapter.read(payload, body, verified.ok ? verified.headerEventId : undefined);
    if (!sent) throw new Error(`the ${adapter.name} adapter's sample event carries no event id`);
    try {
      const receipt = await this.receipts.receive(connector.provider, token, headers, body, origin);
      const stored = await this.events.findOneBy({
        connector_id: connector.id,
        provider_event_id: receipt.event_id,
      });
      return {
        event_id: receipt.event_id,
        event_type: sent.type,
        http_status: 200,
        outcome: receipt.outcome,
        detail: stored?.detail ?? '',
      };
    } catch (error) {
      // What the provider would be answered, as it would be: only a failure of ours is this call's error.
      if (!(error instanceof ApiError) || error.getStatus() >= 500) throw error;
      return {
        event_id: sent.id,
        event_type: sent.type,
        http_status: error.getStatus(),
        outcome: null,
        detail: connector.is_active ? error.message : CONNECTOR_PAUSED,
      };
    }
  }
}
