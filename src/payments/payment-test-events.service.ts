import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { openSecret } from '../common/crypto/crypto.js';
import { ApiError, fieldError } from '../common/http/errors.js';
import { Clock } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { DomainEntity } from '../domains/domain.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import {
  SendTestEventDto,
  TEST_TARGET_NEEDS_PAYMENT,
  TEST_TARGET_TWICE,
} from './dto/payment-connector.dto.js';
import { PaymentConnectorEntity } from './payment-connector.entity.js';
import { PaymentEventEntity, TargetKind } from './payment-event.entity.js';
import { DeliveryOrigin, PaymentReceipts } from './payment-receipt.service.js';
import type { PaymentProvider, SamplePayment } from './providers/provider.js';
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
  /** What the event log says the event moved (or would have), as its `target`; null when nothing was stored. */
  target: { kind: TargetKind; id: number } | null;
}

export const testTargetNotFound = (what: 'License' | 'Domain', id: number) =>
  `${what} ${id} not found in this project: a test payment pays only the connector's own project, its domains and licenses.`;

export const testLicenseBilledByProject = (id: number) =>
  `License ${id} is billed by its project (billing: project): the calling domain's paid flag answers for it, so a payment of the license alone would change no answer. Send the test payment for that domain (domain_id), or make the license billing: license.`;

export const CONNECTOR_PAUSED =
  'The connector is paused (is_active is false): its endpoint answers 404 to every event, this one too.';

/**
 * "Send a test event" (docs/payments.md#send-a-test-event): the provider adapter's sample event (or,
 * for `"event": "payment"`, its paying event carrying the target as real events carry it),
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
    @InjectRepository(DomainEntity) private readonly domains: Repository<DomainEntity>,
    @InjectRepository(LicenseEntity) private readonly licenses: Repository<LicenseEntity>,
    private readonly receipts: PaymentReceipts,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  async send(
    connector: PaymentConnectorEntity,
    origin: DeliveryOrigin,
    request: SendTestEventDto = {},
  ): Promise<TestEventResult> {
    const adapter = providerNamed(connector.provider) as PaymentProvider;
    const payment = await this.paymentOf(connector, request);
    const sealed = await this.connectors
      .createQueryBuilder('c')
      .select(['c.id', 'c.signing_secret'])
      .where('c.id = :id', { id: connector.id })
      .getOneOrFail();
    const secret = openSecret(this.config.appKey, sealed.signing_secret);
    const token = openSecret(this.config.appKey, connector.token_sealed);
    const now = this.clock.nowMs();
    const payload = payment
      ? adapter.samplePayment(new Date(now), payment)
      : adapter.sampleEvent(new Date(now));
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
        target: stored?.target_kind ? { kind: stored.target_kind, id: stored.target_id as number } : null,
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
        target: null,
      };
    }
  }

  /**
   * What a payment test event carries, null for one that moves nothing: the target as real events
   * name it (a domain by its name, a license by its id, the project by neither), and the connector's
   * first product so that a connector listing products takes it.
   */
  private async paymentOf(
    connector: PaymentConnectorEntity,
    body: SendTestEventDto,
  ): Promise<SamplePayment | null> {
    // null is as absent: a generated client sends the fields it was not given as null.
    const request = {
      event: body.event,
      license_id: body.license_id ?? undefined,
      domain_id: body.domain_id ?? undefined,
    };
    const named =
      request.license_id !== undefined ? 'license_id' : request.domain_id !== undefined ? 'domain_id' : null;
    if (request.event !== 'payment') {
      if (named) throw fieldError(named, TEST_TARGET_NEEDS_PAYMENT);
      return null;
    }
    if (request.license_id !== undefined && request.domain_id !== undefined)
      throw fieldError('domain_id', TEST_TARGET_TWICE);
    const first = connector.products?.[0];
    const product = first === undefined ? null : typeof first === 'string' ? first : first.id;
    if (request.license_id !== undefined) {
      const license = await this.licenses.findOneBy({
        id: request.license_id,
        project_id: connector.project_id,
      });
      if (!license)
        throw new ApiError(HttpStatus.NOT_FOUND, testTargetNotFound('License', request.license_id));
      if (license.billing === 'license')
        return { metadata: { licensegate_license: String(license.id) }, product };
      // A billing: project license answers its domain's flag: the payment names that domain, as a real
      // one would (a purchase does not take a billing: project license, docs/payments.md).
      const pinned =
        license.domain_id === null
          ? null
          : await this.domains.findOneBy({ id: license.domain_id, project_id: connector.project_id });
      if (!pinned) throw fieldError('license_id', testLicenseBilledByProject(license.id));
      return { metadata: { licensegate_domain: pinned.domain }, product };
    }
    if (request.domain_id !== undefined) {
      const domain = await this.domains.findOneBy({
        id: request.domain_id,
        project_id: connector.project_id,
      });
      if (!domain) throw new ApiError(HttpStatus.NOT_FOUND, testTargetNotFound('Domain', request.domain_id));
      return { metadata: { licensegate_domain: domain.domain }, product };
    }
    return { metadata: {}, product };
  }
}
