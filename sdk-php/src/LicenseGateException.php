<?php

declare(strict_types=1);

namespace LicenseGate;

/**
 * Any refusal or failure of a LicenseGate call.
 *
 * - `status`: the HTTP status (401, 403, 400, 404, 422, 429, 5xx…), or 0 when the service could not
 *   be reached (DNS, connection refused, timed out).
 * - `errorCode`: `unreachable` (status 0), `timeout` (status 0, after the client's timeout),
 *   `bad_signature` (an answer that did not verify with the project's public key), `http` (the
 *   service's own refusal or failure).
 * - `getMessage()`: the service's own message, e.g. `This license has been revoked.`
 * - `redirectUrl`: the project's `default_redirect_url`, sent with every runtime 403.
 * - `retryAfter`: seconds from `Retry-After` (429).
 * - `errors`: field errors of a 422. `data`: the answer's `data` (a 429 of record() carries the meter).
 */
final class LicenseGateException extends \RuntimeException
{
    /**
     * @param array<string, list<string>>|null $errors
     * @param array<string, mixed>|null $data
     */
    public function __construct(
        string $message,
        public readonly int $status = 0,
        public readonly string $errorCode = 'http',
        public readonly ?string $redirectUrl = null,
        public readonly ?int $retryAfter = null,
        public readonly ?array $errors = null,
        public readonly ?string $requestId = null,
        public readonly ?array $data = null,
        ?\Throwable $previous = null,
    ) {
        parent::__construct($message, $status, $previous);
    }

    /** A refusal of the license itself or its use (401/403): show the redirect, do not retry. */
    public function isRefusal(): bool
    {
        return $this->status === 401 || $this->status === 403;
    }

    /** Retrying later may help: network failures, 429 and 5xx. */
    public function isRetryable(): bool
    {
        return $this->status === 0 || $this->status === 429 || $this->status >= 500;
    }
}
