<?php

declare(strict_types=1);

namespace LicenseGate;

/** The answer of `Client::check()`. */
final class CheckResult
{
    /**
     * @param list<array<string, mixed>> $injectables the active paid-only injectables (includeInjectables, paid)
     * @param array<string, bool|int|string> $entitlements the effective entitlements when paid, else []
     */
    public function __construct(
        public readonly bool $hasPaid,
        public readonly bool $isTestLicense = false,
        /** the project's `default_redirect_url` when not paid, else null */
        public readonly ?string $redirectUrl = null,
        public readonly array $injectables = [],
        /** true when the service could not be reached and the answer comes from a stored, verified answer */
        public readonly bool $offline = false,
        /** offline: when the stored token expires (then the client fails closed) */
        public readonly ?\DateTimeImmutable $expiresAt = null,
        /** while a payment grace runs: when the gate closes unless paid again */
        public readonly ?\DateTimeImmutable $graceUntil = null,
        /** the license's plan code, when the service has plans and the license one */
        public readonly ?string $plan = null,
        public readonly array $entitlements = [],
    ) {
    }

    /** From a has-paid answer's `data`. */
    public static function fromData(mixed $data, bool $offline = false, ?int $expiresAt = null): self
    {
        $d = is_array($data) ? $data : [];
        $hasPaid = ($d['has_paid'] ?? null) === true;
        $grace = Signed::parseDate($d['grace_until'] ?? null);
        $entitlements = is_array($d['entitlements'] ?? null) && $hasPaid ? $d['entitlements'] : [];
        return new self(
            hasPaid: $hasPaid,
            isTestLicense: ($d['is_test_license'] ?? null) === true,
            redirectUrl: is_string($d['redirect_url'] ?? null) ? $d['redirect_url'] : null,
            injectables: is_array($d['injectables'] ?? null) ? array_values($d['injectables']) : [],
            offline: $offline,
            expiresAt: $expiresAt === null ? null : (new \DateTimeImmutable())->setTimestamp($expiresAt),
            graceUntil: $grace === null ? null : (new \DateTimeImmutable())->setTimestamp($grace),
            plan: is_string($d['plan'] ?? null) ? $d['plan'] : null,
            entitlements: $entitlements,
        );
    }

    /** True for an entitlement that is `true`, a positive integer or a non-empty string. */
    public function can(string $code): bool
    {
        $value = $this->entitlements[$code] ?? null;
        return $value === true || (is_int($value) && $value > 0) || (is_string($value) && $value !== '');
    }

    /** The integer value of an entitlement, else null. */
    public function limit(string $code): ?int
    {
        $value = $this->entitlements[$code] ?? null;
        return is_int($value) ? $value : null;
    }
}
