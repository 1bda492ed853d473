import { AccountEntity, MembershipEntity } from '../auth/account.entity.js';
import { ApiKeyEntity } from '../auth/api-key.entity.js';
import { SessionEntity } from '../auth/session.entity.js';
import { InvitationEntity, PasswordResetEntity, UserIdentityEntity } from '../auth/invitation.entity.js';
import { AuditEventEntity } from '../audit/audit-event.entity.js';
import { UserEntity } from '../auth/user.entity.js';
import { DomainEntity } from '../domains/domain.entity.js';
import { InjectableEntity } from '../injectables/injectable.entity.js';
import { LicenseActivationEntity, LicenseUsageEntity } from '../licenses/license-usage.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { Initial1732000000000 } from './migrations/1732000000000-Initial.js';
import { RuntimeCounters1732000000001 } from './migrations/1732000000001-RuntimeCounters.js';
import { Injectables1732000000002 } from './migrations/1732000000002-Injectables.js';
import { Webhooks1732000000003 } from './migrations/1732000000003-Webhooks.js';
import { WebhookTargetHost1732000000004 } from './migrations/1732000000004-WebhookTargetHost.js';
import { UsageFlushes1732000000005 } from './migrations/1732000000005-UsageFlushes.js';
import { Activations1732000000006 } from './migrations/1732000000006-Activations.js';
import { OfflineGraceHours1732000000007 } from './migrations/1732000000007-OfflineGraceHours.js';
import { AuditLog1732000000008 } from './migrations/1732000000008-AuditLog.js';
import { RuntimeAnswers1764200000000 } from './migrations/1764200000000-RuntimeAnswers.js';
import { PaymentConnectors1764100000000 } from './migrations/1764100000000-PaymentConnectors.js';
import { ProjectChangeCounter1764300000000 } from './migrations/1764300000000-ProjectChangeCounter.js';
import { BinaryPaymentIds1764350000000 } from './migrations/1764350000000-BinaryPaymentIds.js';
import { Teams1764400000000 } from './migrations/1764400000000-Teams.js';
import { LicenseBilling1764450000000 } from './migrations/1764450000000-LicenseBilling.js';
import { PaymentEngine1764500000000 } from './migrations/1764500000000-PaymentEngine.js';
import { CustomerPortal1764650000000 } from './migrations/1764650000000-CustomerPortal.js';
import { PaymentEventPayload1764700000000 } from './migrations/1764700000000-PaymentEventPayload.js';
import { LicenseUsagePaid1764750000000 } from './migrations/1764750000000-LicenseUsagePaid.js';
import { PortalLinkEntity, PortalSessionEntity } from '../portal/portal.entity.js';
import { Plans1764600000000 } from './migrations/1764600000000-Plans.js';
import { PlanEntity } from '../plans/plan.entity.js';
import { Invitations1764550000000 } from './migrations/1764550000000-Invitations.js';
import { PaymentConnectorEntity } from '../payments/payment-connector.entity.js';
import { PaymentEventEntity } from '../payments/payment-event.entity.js';
import { SubscriptionEntity, SubscriptionPaymentEntity } from '../payments/subscription.entity.js';
import { CustomerEntity, CustomerExternalIdEntity } from '../customers/customer.entity.js';
import { WebhookAttemptEntity, WebhookDeliveryEntity } from '../webhooks/webhook-delivery.entity.js';

// Listed by hand: glob loading does not work for ESM under jest, and a list shows what exists.
export const entities = [
  UserEntity,
  ApiKeyEntity,
  ProjectEntity,
  DomainEntity,
  LicenseEntity,
  LicenseUsageEntity,
  LicenseActivationEntity,
  InjectableEntity,
  WebhookDeliveryEntity,
  WebhookAttemptEntity,
  AuditEventEntity,
  PaymentConnectorEntity,
  PaymentEventEntity,
  AccountEntity,
  MembershipEntity,
  SessionEntity,
  InvitationEntity,
  PasswordResetEntity,
  UserIdentityEntity,
  CustomerEntity,
  CustomerExternalIdEntity,
  SubscriptionEntity,
  SubscriptionPaymentEntity,
  PortalLinkEntity,
  PortalSessionEntity,
  PlanEntity,
];
export const migrations = [
  Initial1732000000000,
  RuntimeCounters1732000000001,
  Injectables1732000000002,
  Webhooks1732000000003,
  WebhookTargetHost1732000000004,
  UsageFlushes1732000000005,
  Activations1732000000006,
  OfflineGraceHours1732000000007,
  AuditLog1732000000008,
  PaymentConnectors1764100000000,
  RuntimeAnswers1764200000000,
  ProjectChangeCounter1764300000000,
  BinaryPaymentIds1764350000000,
  Teams1764400000000,
  LicenseBilling1764450000000,
  PaymentEngine1764500000000,
  Invitations1764550000000,
  Plans1764600000000,
  CustomerPortal1764650000000,
  PaymentEventPayload1764700000000,
  LicenseUsagePaid1764750000000,
];
