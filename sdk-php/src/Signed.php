<?php

declare(strict_types=1);

namespace LicenseGate;

/**
 * Signed answers and offline tokens (docs/sdk-formats.md), checked with ext-sodium.
 *
 *   X-Service-Signature = "v1," . base64 Ed25519 over
 *     "LG1-ANSWER\n" . date . "\n" . nonce . "\n" . METHOD . " " . path?query . "\n"
 *     . hex(SHA-256(license key)) . "\n" . (X-Service-Domain or "") . "\n" . hex(SHA-256(body))
 *   token = "LG1." . base64url(payload JSON) . "." . base64url(Ed25519 over "LG1-TOKEN\n" . payload part)
 */
final class Signed
{
    /** DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it. */
    private const SPKI_PREFIX = "\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00";

    /**
     * The raw 32-byte key from `public_key` (base64 of the raw key or of the SPKI DER),
     * `public_key_pem`, or the signing-key array of `GET /project/{id}/signing-key`.
     *
     * @param string|array{public_key?: string, public_key_pem?: string} $input
     */
    public static function publicKey(string|array $input): string
    {
        if (is_array($input)) {
            $input = $input['public_key'] ?? $input['public_key_pem'] ?? '';
        }
        if (preg_match('/-----BEGIN PUBLIC KEY-----([\s\S]*?)-----END PUBLIC KEY-----/', $input, $m) === 1) {
            $bytes = base64_decode(preg_replace('/\s+/', '', $m[1]) ?? '', true);
        } else {
            $bytes = base64_decode(trim($input), true);
        }
        if ($bytes !== false && strlen($bytes) === 44 && str_starts_with($bytes, self::SPKI_PREFIX)) {
            $bytes = substr($bytes, 12);
        }
        if ($bytes === false || strlen($bytes) !== SODIUM_CRYPTO_SIGN_PUBLICKEYBYTES) {
            throw new \InvalidArgumentException(
                'Public key: pass the PEM, the base64 public_key or the signing-key array.',
            );
        }
        return $bytes;
    }

    /** The exact text X-Service-Signature covers. */
    public static function answerText(
        string $date,
        string $nonce,
        string $method,
        string $target,
        string $licenseKey,
        string $domain,
        string $body,
    ): string {
        return "LG1-ANSWER\n{$date}\n{$nonce}\n{$method} {$target}\n" . hash('sha256', $licenseKey)
            . "\n{$domain}\n" . hash('sha256', $body);
    }

    /**
     * Why an answer cannot be trusted, or null when its signature verifies and, unless `$maxSkewSeconds`
     * is null, its date is within that many seconds of `$now`. The verdict is one of the words of the
     * shared vectors: `unsigned`, `signature` or `date`.
     *
     * @return array{string, string}|null [verdict, sentence]
     */
    public static function answerProblem(
        ?string $signature,
        ?string $date,
        string $nonce,
        string $method,
        string $target,
        string $licenseKey,
        string $domain,
        string $body,
        string $publicKey,
        ?int $maxSkewSeconds = 300,
        ?int $now = null,
    ): ?array {
        if ($signature === null || $signature === '' || $date === null || $date === '') {
            return ['unsigned', 'the answer is not signed'];
        }
        if (!str_starts_with($signature, 'v1,')) {
            return ['signature', 'the answer is signed with an unknown scheme'];
        }
        $bytes = base64_decode(substr($signature, 3), true);
        $text = self::answerText($date, $nonce, $method, $target, $licenseKey, $domain, $body);
        if (
            $bytes === false
            || strlen($bytes) !== SODIUM_CRYPTO_SIGN_BYTES
            || !sodium_crypto_sign_verify_detached($bytes, $text, $publicKey)
        ) {
            return ['signature', "the answer's signature does not verify (altered in transit, or signed by another key)"];
        }
        if ($maxSkewSeconds !== null) {
            $at = self::parseDate($date);
            if ($at === null || abs(($now ?? time()) - $at) > $maxSkewSeconds) {
                return ['date', "the answer's date {$date} is more than {$maxSkewSeconds} s from this clock"];
            }
        }
        return null;
    }

    /**
     * An offline token's payload when its signature verifies with `$publicKey` and it is well formed;
     * null otherwise, whatever the reason.
     *
     * @return array<string, mixed>|null
     */
    public static function openToken(string $token, string $publicKey): ?array
    {
        $parts = explode('.', $token);
        if (count($parts) !== 3 || $parts[0] !== 'LG1') {
            return null;
        }
        $signature = self::fromBase64Url($parts[2]);
        if (
            $signature === null
            || strlen($signature) !== SODIUM_CRYPTO_SIGN_BYTES
            || !sodium_crypto_sign_verify_detached($signature, "LG1-TOKEN\n{$parts[1]}", $publicKey)
        ) {
            return null;
        }
        $json = self::fromBase64Url($parts[1]);
        $payload = $json === null ? null : json_decode($json, true);
        if (
            !is_array($payload)
            || ($payload['has_paid'] ?? null) !== true
            || !is_int($payload['exp'] ?? null)
            || !is_int($payload['iat'] ?? null)
            || !is_string($payload['key_sha256'] ?? null)
        ) {
            return null;
        }
        return $payload;
    }

    /**
     * Why a token is not usable by this project, license key and domain at `$now`, or null when it is:
     * `signature`, `project`, `license`, `domain` or `expired` (the shared vectors' words).
     */
    public static function tokenProblem(
        string $token,
        string $publicKey,
        int $projectId,
        string $licenseKey,
        ?string $domain,
        ?int $now = null,
    ): ?string {
        $payload = self::openToken($token, $publicKey);
        if ($payload === null) {
            return 'signature';
        }
        if (($payload['project_id'] ?? null) !== $projectId) {
            return 'project';
        }
        if (!hash_equals(hash('sha256', $licenseKey), $payload['key_sha256'])) {
            return 'license';
        }
        if (($payload['domain'] ?? null) !== $domain) {
            return 'domain';
        }
        return $payload['exp'] > ($now ?? time()) ? null : 'expired';
    }

    /** A fresh nonce: 16 random bytes, base64url (22 characters). */
    public static function newNonce(): string
    {
        return rtrim(strtr(base64_encode(random_bytes(16)), '+/', '-_'), '=');
    }

    /**
     * A calling domain as the service normalises it: the host of a URL or `host:port`, lowercased,
     * without a trailing dot, IDN as punycode (with ext-intl). Null for nothing usable.
     */
    public static function normalizeDomain(?string $value): ?string
    {
        if ($value === null || trim($value) === '') {
            return null;
        }
        $value = trim($value);
        $host = parse_url(str_contains($value, '://') ? $value : "http://{$value}", PHP_URL_HOST);
        $host = is_string($host) && $host !== '' ? $host : $value;
        $host = rtrim(strtolower($host), '.');
        if ($host !== '' && preg_match('/[^\x00-\x7f]/', $host) === 1 && function_exists('idn_to_ascii')) {
            $ascii = idn_to_ascii($host, IDNA_DEFAULT, INTL_IDNA_VARIANT_UTS46);
            $host = is_string($ascii) ? $ascii : $host;
        }
        return $host === '' ? null : $host;
    }

    /** ISO-8601 to unix seconds; null when unreadable. */
    public static function parseDate(mixed $value): ?int
    {
        if (!is_string($value) || $value === '') {
            return null;
        }
        try {
            return (new \DateTimeImmutable($value))->getTimestamp();
        } catch (\Exception) {
            return null;
        }
    }

    private static function fromBase64Url(string $part): ?string
    {
        if (preg_match('/^[A-Za-z0-9_-]*$/', $part) !== 1) {
            return null;
        }
        $bytes = base64_decode(strtr($part, '-_', '+/'), true);
        return $bytes === false ? null : $bytes;
    }
}
