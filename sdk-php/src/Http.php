<?php

declare(strict_types=1);

namespace LicenseGate;

/**
 * How the client sends a request: curl (ext-curl), any PSR-18 client (with a PSR-17 request factory
 * and stream factory), or a callable. A PSR-18 client is used by its methods alone, so this package
 * requires no psr/* package.
 *
 * A transport throws LicenseGateException with status 0 (`unreachable` or `timeout`) when no answer
 * arrived; any answer, whatever its status, is returned.
 */
final class Http
{
    /** @var \Closure(string, string, array<string, string>, ?string, float): HttpResponse */
    private \Closure $send;

    /**
     * @param object|callable|null $client null (curl), a PSR-18 client, or
     *   fn(string $method, string $url, array $headers, ?string $body, float $timeout): HttpResponse
     */
    public function __construct(object|callable|null $client = null, ?object $requestFactory = null, ?object $streamFactory = null)
    {
        if ($client === null) {
            if (!function_exists('curl_init')) {
                throw new \InvalidArgumentException(
                    'LicenseGate: ext-curl is not loaded; pass a PSR-18 client as httpClient (with requestFactory and streamFactory).',
                );
            }
            $this->send = \Closure::fromCallable([self::class, 'curl']);
        } elseif (is_object($client) && method_exists($client, 'sendRequest')) {
            if ($requestFactory === null || !method_exists($requestFactory, 'createRequest')) {
                throw new \InvalidArgumentException('LicenseGate: a PSR-18 httpClient needs a PSR-17 requestFactory.');
            }
            $this->send = static fn (string $method, string $url, array $headers, ?string $body, float $timeout) =>
                self::psr18($client, $requestFactory, $streamFactory, $method, $url, $headers, $body);
        } elseif (is_callable($client)) {
            $this->send = \Closure::fromCallable($client);
        } else {
            throw new \InvalidArgumentException('LicenseGate: httpClient must be a PSR-18 client or a callable.');
        }
    }

    /** @param array<string, string> $headers */
    public function send(string $method, string $url, array $headers, ?string $body, float $timeout): HttpResponse
    {
        return ($this->send)($method, $url, $headers, $body, $timeout);
    }

    /** @param array<string, string> $headers */
    private static function curl(string $method, string $url, array $headers, ?string $body, float $timeout): HttpResponse
    {
        $received = [];
        $lines = [];
        foreach ($headers as $name => $value) {
            $lines[] = "{$name}: {$value}";
        }
        $lines[] = 'Expect:'; // no 100-continue round trip before a small body
        $ch = curl_init($url);
        curl_setopt_array($ch, [
            CURLOPT_CUSTOMREQUEST => $method,
            CURLOPT_HTTPHEADER => $lines,
            CURLOPT_RETURNTRANSFER => true,
            CURLOPT_FOLLOWLOCATION => false,
            CURLOPT_TIMEOUT_MS => (int) ceil($timeout * 1000),
            CURLOPT_CONNECTTIMEOUT_MS => (int) ceil($timeout * 1000),
            CURLOPT_PROTOCOLS => CURLPROTO_HTTP | CURLPROTO_HTTPS,
            CURLOPT_HEADERFUNCTION => static function ($ch, string $line) use (&$received): int {
                $parts = explode(':', $line, 2);
                if (count($parts) === 2) {
                    $received[strtolower(trim($parts[0]))] = trim($parts[1]);
                }
                return strlen($line);
            },
        ]);
        if ($body !== null) {
            curl_setopt($ch, CURLOPT_POSTFIELDS, $body);
        } elseif ($method === 'POST') {
            curl_setopt($ch, CURLOPT_POSTFIELDS, '');
        }
        $answer = curl_exec($ch);
        $errno = curl_errno($ch);
        $error = curl_error($ch);
        $status = (int) curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
        curl_close($ch);
        if ($errno === CURLE_OPERATION_TIMEDOUT) {
            throw new LicenseGateException(
                sprintf('LicenseGate did not answer within %d ms.', (int) ceil($timeout * 1000)),
                0,
                'timeout',
            );
        }
        if ($errno !== 0 || !is_string($answer)) {
            throw new LicenseGateException("Could not reach LicenseGate: {$error}", 0, 'unreachable');
        }
        return new HttpResponse($status, $received, $answer);
    }

    /** @param array<string, string> $headers */
    private static function psr18(
        object $client,
        object $requestFactory,
        ?object $streamFactory,
        string $method,
        string $url,
        array $headers,
        ?string $body,
    ): HttpResponse {
        $request = $requestFactory->createRequest($method, $url);
        foreach ($headers as $name => $value) {
            $request = $request->withHeader($name, $value);
        }
        if ($body !== null) {
            if ($streamFactory === null || !method_exists($streamFactory, 'createStream')) {
                throw new \InvalidArgumentException('LicenseGate: record() through a PSR-18 client needs a PSR-17 streamFactory.');
            }
            $request = $request->withBody($streamFactory->createStream($body));
        }
        try {
            $response = $client->sendRequest($request);
        } catch (\Throwable $e) {
            // PSR-18 NetworkException and RequestException: no answer arrived.
            throw new LicenseGateException("Could not reach LicenseGate: {$e->getMessage()}", 0, 'unreachable', previous: $e);
        }
        $received = [];
        foreach ($response->getHeaders() as $name => $values) {
            $received[strtolower((string) $name)] = implode(', ', (array) $values);
        }
        return new HttpResponse((int) $response->getStatusCode(), $received, (string) $response->getBody());
    }
}
