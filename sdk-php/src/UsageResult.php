<?php

declare(strict_types=1);

namespace LicenseGate;

/** The answer of `Client::record()`: the meter's count this UTC month after the call. */
final class UsageResult
{
    public function __construct(
        public readonly string $meter,
        public readonly int $used,
        public readonly ?int $limit,
        public readonly ?int $remaining,
        public readonly ?\DateTimeImmutable $resetsAt,
    ) {
    }

    public static function fromData(mixed $data): self
    {
        $d = is_array($data) ? $data : [];
        $resets = Signed::parseDate($d['resets_at'] ?? null);
        return new self(
            meter: is_string($d['meter'] ?? null) ? $d['meter'] : '',
            used: is_int($d['used'] ?? null) ? $d['used'] : 0,
            limit: is_int($d['limit'] ?? null) ? $d['limit'] : null,
            remaining: is_int($d['remaining'] ?? null) ? $d['remaining'] : null,
            resetsAt: $resets === null ? null : (new \DateTimeImmutable())->setTimestamp($resets),
        );
    }
}
