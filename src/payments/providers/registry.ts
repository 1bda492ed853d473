import { lemonSqueezy } from './lemonsqueezy.js';
import { paddle } from './paddle.js';
import { polar } from './polar.js';
import type { PaymentProvider } from './provider.js';
import { standard } from './standard.js';
import { stripe } from './stripe.js';

/**
 * Every payment provider a connector can take, in the order the docs list them: the one list the
 * connector entity, the DTOs, the OpenAPI enums and the webhook route read (docs/architecture.md,
 * "Payment providers"). A new provider is its file beside this one and a line here.
 */
export const PAYMENT_PROVIDERS = [stripe, paddle, lemonSqueezy, polar, standard] as const;

/** A provider's name: the `provider` of a connector, of a license's payment_reference and of the endpoint path. */
export type Provider = (typeof PAYMENT_PROVIDERS)[number]['name'];

export const PROVIDERS: readonly Provider[] = PAYMENT_PROVIDERS.map((p) => p.name);

const BY_NAME = new Map<string, PaymentProvider>(PAYMENT_PROVIDERS.map((p) => [p.name, p]));

/** The provider of that name; undefined for any other string (a path segment is anyone's). */
export const providerNamed = (name: string): PaymentProvider | undefined => BY_NAME.get(name);
