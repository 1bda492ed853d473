<?php

declare(strict_types=1);

namespace LicenseGate;

/**
 * The runtime client: license-key calls only (has-paid, self-service deactivation, metered usage).
 *
 * Options (array keys):
 * - `baseUrl` (required): `https://host/api/v1`, or the bare origin (then `/api/v1` is appended).
 * - `licenseKey` (required): the license's `uuid`, sent as `X-LICENSE-KEY`.
 * - `domain`: the calling domain, sent as `X-Service-Domain` (a server has no Origin to fall back on).
 * - `timeout`: seconds before a call is given up (`LicenseGateException` errorCode `timeout`). Default 10.
 * - `publicKey` + `projectId`: verify every answer (signature, own nonce, date within `maxSkewSeconds`,
 *   default 300); otherwise `LicenseGateException` errorCode `bad_signature`.
 * - `offline`: `true` (memory) or an `AnswerStore` such as `new FileStore($path)` (needs `publicKey`):
 *   has-paid asks for an offline token, keeps the last verified paid answer per domain, and answers
 *   from it while the service cannot be reached (network error, timeout, 5xx) and its token is valid.
 * - `httpClient` (+ `requestFactory`, `streamFactory`): a PSR-18 client instead of curl, or a callable
 *   fn($method, $url, $headers, $body, $timeout): HttpResponse.
 */
final class Client
{
    public readonly string $baseUrl;
    private readonly string $licenseKey;
    private readonly ?string $domain;
    private readonly float $timeout;
    private readonly ?string $publicKey;
    private readonly int $projectId;
    private readonly int $maxSkewSeconds;
    private readonly ?AnswerStore $store;
    private readonly Http $http;
    /** The last verified answer of check(), which can() and limit() read. */
    private ?CheckResult $last = null;

    /** @param array<string, mixed> $options */
    public function __construct(array $options)
    {
        $licenseKey = $options['licenseKey'] ?? null;
        if (!is_string($licenseKey) || trim($licenseKey) === '') {
            throw new \InvalidArgumentException('LicenseGate: licenseKey is required');
        }
        $this->baseUrl = self::normalizeBaseUrl((string) ($options['baseUrl'] ?? ''));
        // Header values travel trimmed: the signed text must hold what the service received.
        $this->licenseKey = trim($licenseKey);
        $domain = isset($options['domain']) ? trim((string) $options['domain']) : '';
        $this->domain = $domain === '' ? null : $domain;
        $this->timeout = (float) ($options['timeout'] ?? 10);
        if ($this->timeout <= 0) {
            throw new \InvalidArgumentException('LicenseGate: timeout must be a positive number of seconds');
        }
        if (isset($options['publicKey'])) {
            $projectId = filter_var($options['projectId'] ?? null, FILTER_VALIDATE_INT, ['options' => ['min_range' => 1]]);
            if ($projectId === false) {
                throw new \InvalidArgumentException("LicenseGate: projectId (the project's id) is required with publicKey");
            }
            $this->publicKey = Signed::publicKey($options['publicKey']);
            $this->projectId = $projectId;
            $this->maxSkewSeconds = (int) ($options['maxSkewSeconds'] ?? 300);
        } else {
            $this->publicKey = null;
            $this->projectId = 0;
            $this->maxSkewSeconds = 300;
        }
        $offline = $options['offline'] ?? false;
        if ($offline !== false && $offline !== null) {
            if ($this->publicKey === null) {
                throw new \InvalidArgumentException(
                    'LicenseGate: offline mode needs publicKey and projectId (answers are verified before they are trusted)',
                );
            }
            $this->store = $offline instanceof AnswerStore ? $offline : new MemoryStore();
        } else {
            $this->store = null;
        }
        $this->http = new Http($options['httpClient'] ?? null, $options['requestFactory'] ?? null, $options['streamFactory'] ?? null);
    }

    /** Normalises a base address to `…/api/v1` without a trailing slash. */
    public static function normalizeBaseUrl(string $baseUrl): string
    {
        $parts = parse_url(trim($baseUrl));
        $scheme = strtolower((string) ($parts['scheme'] ?? ''));
        if ($parts === false || !isset($parts['host']) || ($scheme !== 'http' && $scheme !== 'https')) {
            throw new \InvalidArgumentException("LicenseGate: baseUrl must be an http or https URL: {$baseUrl}");
        }
        $path = rtrim($parts['path'] ?? '', '/');
        if ($path === '') {
            $path = '/api/v1';
        } elseif (str_ends_with($path, '/api')) {
            $path .= '/v1';
        }
        $port = isset($parts['port']) ? ":{$parts['port']}" : '';
        return "{$scheme}://{$parts['host']}{$port}{$path}";
    }

    /**
     * `POST /project/has-paid`: paid or not, with `graceUntil`, `plan` and `entitlements`. Throws
     * LicenseGateException on any refusal (401, 403, 400, 429…); in offline mode answers from the
     * stored answer while the service cannot be reached.
     *
     * @param array{checkProject?: bool, includeInjectables?: bool, domain?: string} $options
     */
    public function check(array $options = []): CheckResult
    {
        $include = array_filter([
            !empty($options['includeInjectables']) ? 'injectables' : null,
            $this->store !== null ? 'token' : null,
        ]);
        $query = array_filter([
            'action' => !empty($options['checkProject']) ? 'check_project' : null,
            'include' => $include === [] ? null : implode(',', $include),
        ]);
        $sentDomain = $this->callingDomain($options['domain'] ?? null);
        if ($this->store === null) {
            return $this->last = CheckResult::fromData($this->call('POST', '/project/has-paid', $query, $sentDomain));
        }

        // Offline mode: the answer kept for this call's domain (none for a project-level check).
        $domain = !empty($options['checkProject']) ? null : Signed::normalizeDomain($sentDomain);
        $slot = hash('sha256', $this->licenseKey) . ":{$this->projectId}:" . ($domain ?? '*');
        try {
            $answer = $this->send('POST', '/project/has-paid', $query, $sentDomain);
        } catch (LicenseGateException $e) {
            if ($e->status === 0) {
                return $this->last = $this->fromStore($slot, $domain, $e);
            }
            throw $e;
        }
        if ($answer['response']->status >= 500) {
            return $this->last = $this->fromStore($slot, $domain, self::errorFrom($answer['response'], $answer['body']));
        }
        $status = $answer['response']->status;
        if ($status === 401 || $status === 403 || $status === 429) {
            // A refusal ends offline use, even one that cannot be verified (a key the service no
            // longer knows is refused unsigned): for a paywall, the safe side of doubt is closed.
            $this->store->delete($slot);
        }
        $data = $this->accept($answer);
        $result = CheckResult::fromData($data);
        $token = is_array($data) ? ($data['token'] ?? null) : null;
        if (!$result->hasPaid) {
            $this->store->delete($slot);
        } elseif (is_string($token) && $this->tokenPayload($token, $domain) !== null) {
            $this->keepNewest($slot, $answer['signed'], $token, $domain);
        }
        return $this->last = $result;
    }

    /** The same as check(): the name of the service's route. */
    public function hasPaid(array $options = []): CheckResult
    {
        return $this->check($options);
    }

    /**
     * `POST /license/deactivate`: frees the slot this license holds for a host (default: the client's
     * `domain`) → the number of activations deleted (0 when there were none). A few a day per
     * license (429, `retryAfter` set, past them).
     *
     * @param array{domain?: string} $options
     */
    public function deactivate(array $options = []): int
    {
        $data = $this->call('POST', '/license/deactivate', [], $this->callingDomain($options['domain'] ?? null));
        return is_array($data) && is_int($data['deactivated'] ?? null) ? $data['deactivated'] : 0;
    }

    /**
     * `POST /license/usage`: counts `$amount` of a metered entitlement (`meter.*`) this UTC month. The
     * idempotency key makes a retry count once (a random one when omitted: pass your own to retry
     * safely). Past the limit: LicenseGateException 429 with the meter in `data`, nothing counted.
     */
    public function record(string $meter, int $amount = 1, ?string $idempotencyKey = null): UsageResult
    {
        $body = json_encode([
            'meter' => $meter,
            'amount' => $amount,
            'idempotency_key' => $idempotencyKey ?? bin2hex(random_bytes(16)),
        ], JSON_THROW_ON_ERROR);
        return UsageResult::fromData($this->call('POST', '/license/usage', [], $this->callingDomain(null), $body));
    }

    /**
     * True when the last verified answer (online or offline) grants `$code`: `true`, a positive
     * integer or a non-empty string. Checks once first when nothing was checked yet; a failed check
     * answers false (closed).
     */
    public function can(string $code): bool
    {
        return $this->lastResult()?->can($code) ?? false;
    }

    /** The integer value of an entitlement in the last verified answer, else null (also when a check fails). */
    public function limit(string $code): ?int
    {
        return $this->lastResult()?->limit($code);
    }

    private function lastResult(): ?CheckResult
    {
        if ($this->last === null) {
            try {
                $this->check();
            } catch (LicenseGateException) {
                return null;
            }
        }
        return $this->last;
    }

    private function callingDomain(?string $domain): ?string
    {
        $domain = $domain === null ? '' : trim($domain);
        return $domain !== '' ? $domain : $this->domain;
    }

    /**
     * One call; the envelope's `data`, or LicenseGateException.
     *
     * @param array<string, string> $query
     */
    private function call(string $method, string $path, array $query, ?string $domain, ?string $body = null): mixed
    {
        return $this->accept($this->send($method, $path, $query, $domain, $body));
    }

    /**
     * The `data` of an answer that verified (when verifying) and succeeded.
     *
     * @param array{response: HttpResponse, body: ?array<string, mixed>, problem: ?string, signed: ?array<string, mixed>} $answer
     */
    private function accept(array $answer): mixed
    {
        ['response' => $res, 'body' => $body, 'problem' => $problem] = $answer;
        if ($problem !== null) {
            throw new LicenseGateException(
                "LicenseGate's answer (HTTP {$res->status}) was refused: {$problem}.",
                $res->status,
                'bad_signature',
                requestId: $res->header('x-request-id'),
            );
        }
        if ($res->status >= 200 && $res->status < 300) {
            if (($body['status'] ?? null) === 'success') {
                return $body['data'] ?? null;
            }
            throw new LicenseGateException(
                'LicenseGate answered with something other than its JSON envelope.',
                $res->status,
                requestId: $res->header('x-request-id'),
            );
        }
        throw self::errorFrom($res, $body);
    }

    /**
     * Sends one request and reads its answer, verified when a public key is set: every answer but a
     * 5xx (which only ever leads to offline mode) must carry a valid signature, else `problem` says
     * why not. `signed` holds what the signature covers, for the store.
     *
     * @param array<string, string> $query
     * @return array{response: HttpResponse, body: ?array<string, mixed>, problem: ?string, signed: ?array<string, mixed>}
     */
    private function send(string $method, string $path, array $query, ?string $domain, ?string $body = null): array
    {
        $qs = http_build_query($query, '', '&', PHP_QUERY_RFC3986);
        $url = $this->baseUrl . $path . ($qs === '' ? '' : "?{$qs}");
        $headers = ['Accept' => 'application/json', 'X-LICENSE-KEY' => $this->licenseKey];
        if ($domain !== null) {
            $headers['X-Service-Domain'] = $domain;
        }
        if ($body !== null) {
            $headers['Content-Type'] = 'application/json';
        }
        $nonce = $this->publicKey !== null ? Signed::newNonce() : null;
        if ($nonce !== null) {
            $headers['X-Service-Nonce'] = $nonce;
        }
        $res = $this->http->send($method, $url, $headers, $body, $this->timeout);
        $parsed = json_decode($res->body, true);
        $envelope = is_array($parsed) ? $parsed : null;
        $problem = null;
        $signed = null;
        if ($this->publicKey !== null && $nonce !== null && $res->status < 500) {
            $signed = [
                'date' => $res->header('x-service-date'),
                'signature' => $res->header('x-service-signature'),
                'nonce' => $nonce,
                'method' => $method,
                'target' => (string) parse_url($url, PHP_URL_PATH) . ($qs === '' ? '' : "?{$qs}"),
                'domain' => $domain ?? '',
                'body' => $res->body,
            ];
            $problem = $this->signedProblem($signed, $this->maxSkewSeconds)[1] ?? null;
        }
        return ['response' => $res, 'body' => $envelope, 'problem' => $problem, 'signed' => $signed];
    }

    /**
     * @param array<string, mixed> $signed
     * @return array{string, string}|null
     */
    private function signedProblem(array $signed, ?int $maxSkewSeconds): ?array
    {
        return Signed::answerProblem(
            is_string($signed['signature'] ?? null) ? $signed['signature'] : null,
            is_string($signed['date'] ?? null) ? $signed['date'] : null,
            (string) ($signed['nonce'] ?? ''),
            (string) ($signed['method'] ?? ''),
            (string) ($signed['target'] ?? ''),
            $this->licenseKey,
            (string) ($signed['domain'] ?? ''),
            (string) ($signed['body'] ?? ''),
            (string) $this->publicKey,
            $maxSkewSeconds,
        );
    }

    /** @return array<string, mixed>|null the token's payload when usable by this project, license and domain now */
    private function tokenPayload(string $token, ?string $domain): ?array
    {
        if (Signed::tokenProblem($token, (string) $this->publicKey, $this->projectId, $this->licenseKey, $domain) !== null) {
            return null;
        }
        return Signed::openToken($token, (string) $this->publicKey);
    }

    /**
     * Keeps `$signed` (a verified paid answer carrying `$token`) unless the stored one is valid and newer.
     *
     * @param array<string, mixed> $signed
     */
    private function keepNewest(string $slot, array $signed, string $token, ?string $domain): void
    {
        $held = $this->stored($slot, $domain);
        $fresh = $this->tokenPayload($token, $domain);
        if ($held !== null && $fresh !== null && $held['payload']['iat'] > $fresh['iat']) {
            return;
        }
        $this->store?->set($slot, json_encode($signed, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES));
    }

    /**
     * The stored answer of a slot, verified again as it is read (its date may be old: its token
     * bounds how long it counts), with its token's payload; null when none is usable.
     *
     * @return array{data: array<string, mixed>, payload: array<string, mixed>}|null
     */
    private function stored(string $slot, ?string $domain): ?array
    {
        $text = $this->store?->get($slot);
        $signed = is_string($text) ? json_decode($text, true) : null;
        if (!is_array($signed) || $this->signedProblem($signed, null) !== null) {
            return null;
        }
        $body = json_decode((string) $signed['body'], true);
        $data = is_array($body) && is_array($body['data'] ?? null) ? $body['data'] : null;
        $token = $data['token'] ?? null;
        $payload = is_string($token) ? $this->tokenPayload($token, $domain) : null;
        return $payload === null || ($data['has_paid'] ?? null) !== true ? null : ['data' => $data, 'payload' => $payload];
    }

    /** The answer from the store while the service cannot be reached; `$failure` when there is none. */
    private function fromStore(string $slot, ?string $domain, LicenseGateException $failure): CheckResult
    {
        $held = $this->stored($slot, $domain);
        if ($held === null) {
            // Expired or no longer valid: fail closed, and forget it.
            $this->store?->delete($slot);
            throw $failure;
        }
        return CheckResult::fromData($held['data'], true, $held['payload']['exp']);
    }

    /** @param array<string, mixed>|null $body */
    private static function errorFrom(HttpResponse $res, ?array $body): LicenseGateException
    {
        $data = is_array($body['data'] ?? null) ? $body['data'] : null;
        $message = is_string($body['message'] ?? null) && $body['message'] !== ''
            ? $body['message']
            : "LicenseGate answered HTTP {$res->status} without a readable message.";
        return new LicenseGateException(
            $message,
            $res->status,
            'http',
            redirectUrl: is_string($data['redirect_url'] ?? null) ? $data['redirect_url'] : null,
            retryAfter: self::retryAfter($res->header('retry-after')),
            errors: is_array($body['errors'] ?? null) ? $body['errors'] : null,
            requestId: $res->header('x-request-id'),
            data: $data,
        );
    }

    /** `Retry-After` as seconds: delta-seconds or an HTTP date; null when absent or unreadable. */
    public static function retryAfter(?string $value, ?int $now = null): ?int
    {
        if ($value === null) {
            return null;
        }
        $value = trim($value);
        if (preg_match('/^\d+$/', $value) === 1) {
            return (int) $value;
        }
        $at = strtotime($value);
        return $at === false ? null : max(0, $at - ($now ?? time()));
    }
}
