<?php

declare(strict_types=1);

namespace LicenseGate;

/** One answer as received: status, headers (names lowercased) and the body's exact bytes. */
final class HttpResponse
{
    /** @param array<string, string> $headers */
    public function __construct(
        public readonly int $status,
        public readonly array $headers,
        public readonly string $body,
    ) {
    }

    public function header(string $name): ?string
    {
        return $this->headers[strtolower($name)] ?? null;
    }
}
