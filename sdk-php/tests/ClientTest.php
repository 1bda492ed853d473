<?php

declare(strict_types=1);

namespace LicenseGate\Tests;

use LicenseGate\Client;
use LicenseGate\FileStore;
use LicenseGate\HttpResponse;
use LicenseGate\LicenseGateException;
use PHPUnit\Framework\TestCase;

/** The client against a live LicenseGate (tests/LiveServer.php). */
final class ClientTest extends TestCase
{
    private static array $seed;
    private static string $dir;

    public static function setUpBeforeClass(): void
    {
        self::$seed = LiveServer::get()->seed;
        self::$dir = sys_get_temp_dir() . '/licensegate-php-' . bin2hex(random_bytes(4));
        mkdir(self::$dir, 0700);
    }

    public static function tearDownAfterClass(): void
    {
        array_map('unlink', glob(self::$dir . '/*') ?: []);
        rmdir(self::$dir);
    }

    private static function client(array $options = []): Client
    {
        return new Client($options + [
            'baseUrl' => self::$seed['base_url'],
            'licenseKey' => self::$seed['license_key'],
            'domain' => self::$seed['domains']['paid'],
        ]);
    }

    private static function signed(array $options = []): Client
    {
        return self::client($options + [
            'publicKey' => self::$seed['public_key'],
            'projectId' => self::$seed['project_id'],
        ]);
    }

    private static function refusal(callable $call): LicenseGateException
    {
        try {
            $call();
        } catch (LicenseGateException $e) {
            return $e;
        }
        self::fail('expected a LicenseGateException');
    }

    public function testPaidDomain(): void
    {
        foreach ([self::client(), self::signed()] as $client) {
            $result = $client->check();
            $this->assertTrue($result->hasPaid);
            $this->assertFalse($result->offline);
            $this->assertNull($result->graceUntil);
            $this->assertNull($result->redirectUrl);
        }
        // The bare origin works as the base address; a subdomain of a paid domain is paid.
        $origin = preg_replace('#/api/v1$#', '', self::$seed['base_url']);
        $this->assertTrue(self::client(['baseUrl' => $origin])->check(['domain' => 'www.' . self::$seed['domains']['paid']])->hasPaid);
    }

    public function testUnpaidDomain(): void
    {
        $result = self::signed(['domain' => self::$seed['domains']['unpaid']])->check();
        $this->assertFalse($result->hasPaid);
        $this->assertSame(self::$seed['redirect_url'], $result->redirectUrl);
        $this->assertSame([], $result->entitlements);
        $this->assertNull($result->plan);
    }

    public function testUnregisteredDomainIsRefused(): void
    {
        $e = self::refusal(fn () => self::signed(['domain' => 'not-registered.example.org'])->check());
        $this->assertSame(403, $e->status);
        $this->assertSame('http', $e->errorCode);
        $this->assertSame('Domain is not registered under this project.', $e->getMessage());
        $this->assertSame(self::$seed['redirect_url'], $e->redirectUrl);
        $this->assertTrue($e->isRefusal());
        $this->assertFalse($e->isRetryable());
    }

    public function testRevokedLicenseIsRefused(): void
    {
        $e = self::refusal(fn () => self::signed(['licenseKey' => self::$seed['revoked_license_key']])->check());
        $this->assertSame(403, $e->status);
        $this->assertSame('This license has been revoked.', $e->getMessage());
        $this->assertSame(self::$seed['redirect_url'], $e->redirectUrl);
    }

    public function testGrace(): void
    {
        $result = self::signed(['domain' => self::$seed['domains']['grace']])->check();
        $this->assertTrue($result->hasPaid);
        $this->assertNotNull($result->graceUntil);
        // grace_days 3 on the connector that reported the failed payment.
        $this->assertEqualsWithDelta(time() + 3 * 86400, $result->graceUntil->getTimestamp(), 600);
    }

    public function testPlanAndEntitlements(): void
    {
        $client = self::signed();
        $plan = self::$seed['plan'];
        if ($plan === null) {
            // This build of the service has no plans yet: answers carry neither.
            $this->assertNull($client->check()->plan);
            $this->assertFalse($client->can('feature.reports'));
            $this->assertNull($client->limit('seats'));
            return;
        }
        $result = $client->check();
        $this->assertSame($plan['code'], $result->plan);
        $this->assertEquals($plan['entitlements'], $result->entitlements);
        $this->assertTrue($client->can('feature.reports'));
        $this->assertSame(5, $client->limit('seats'));
        $this->assertFalse($client->can('not.granted'));
    }

    public function testCanChecksOnceWhenNothingWasChecked(): void
    {
        $calls = 0;
        $client = self::client(['httpClient' => function (string $method, string $url, array $headers) use (&$calls) {
            $calls++;
            return new HttpResponse(200, [], json_encode(['status' => 'success', 'message' => 'Success', 'data' => [
                'has_paid' => true, 'is_test_license' => false, 'plan' => 'pro', 'entitlements' => ['seats' => 3],
            ], 'errors' => null]));
        }]);
        $this->assertSame(3, $client->limit('seats'));
        $this->assertTrue($client->can('seats'));
        $this->assertSame(1, $calls);
        // A check that fails answers closed.
        $failing = self::client(['baseUrl' => 'http://127.0.0.1:9', 'timeout' => 2]);
        $this->assertFalse($failing->can('seats'));
        $this->assertNull($failing->limit('seats'));
    }

    public function testAnswerSignedWithAnotherKeyIsRefused(): void
    {
        $client = self::client(['publicKey' => self::$seed['other_public_key'], 'projectId' => self::$seed['project_id']]);
        $e = self::refusal(fn () => $client->check());
        $this->assertSame('bad_signature', $e->errorCode);
        $this->assertSame(200, $e->status);
        $this->assertSame(
            "LicenseGate's answer (HTTP 200) was refused: the answer's signature does not verify (altered in transit, or signed by another key).",
            $e->getMessage(),
        );
    }

    public function testAlteredAnswerIsRefused(): void
    {
        // A proxy that turns an unpaid answer into a paid one, keeping the signature headers.
        $client = self::signed([
            'domain' => self::$seed['domains']['unpaid'],
            'httpClient' => function (string $method, string $url, array $headers, ?string $body, float $timeout) {
                $ch = curl_init($url);
                $got = [];
                curl_setopt_array($ch, [
                    CURLOPT_CUSTOMREQUEST => $method,
                    CURLOPT_POSTFIELDS => '',
                    CURLOPT_RETURNTRANSFER => true,
                    CURLOPT_HTTPHEADER => array_map(fn ($k, $v) => "{$k}: {$v}", array_keys($headers), $headers),
                    CURLOPT_HEADERFUNCTION => function ($ch, $line) use (&$got) {
                        $p = explode(':', $line, 2);
                        if (count($p) === 2) {
                            $got[strtolower(trim($p[0]))] = trim($p[1]);
                        }
                        return strlen($line);
                    },
                ]);
                $answer = (string) curl_exec($ch);
                $status = curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
                $this->assertStringContainsString('"has_paid":false', $answer);
                return new HttpResponse($status, $got, str_replace('"has_paid":false', '"has_paid":true', $answer));
            },
        ]);
        $e = self::refusal(fn () => $client->check());
        $this->assertSame('bad_signature', $e->errorCode);
        $this->assertStringContainsString('does not verify', $e->getMessage());
    }

    public function testUnreachableAndTimeout(): void
    {
        $e = self::refusal(fn () => self::client(['baseUrl' => 'http://127.0.0.1:9'])->check());
        $this->assertSame(0, $e->status);
        $this->assertSame('unreachable', $e->errorCode);
        $this->assertStringStartsWith('Could not reach LicenseGate: ', $e->getMessage());

        // A server that accepts the connection and never answers.
        $server = stream_socket_server('tcp://127.0.0.1:0');
        $port = parse_url('tcp://' . stream_socket_get_name($server, false), PHP_URL_PORT);
        $started = microtime(true);
        $e = self::refusal(fn () => self::client(['baseUrl' => "http://127.0.0.1:{$port}", 'timeout' => 0.5])->check());
        fclose($server);
        $this->assertSame('timeout', $e->errorCode);
        $this->assertSame('LicenseGate did not answer within 500 ms.', $e->getMessage());
        $this->assertLessThan(5, microtime(true) - $started);
    }

    public function testPsr18Client(): void
    {
        $psr = new FakePsr18();
        $client = self::signed(['httpClient' => $psr, 'requestFactory' => $psr, 'streamFactory' => $psr]);
        $this->assertTrue($client->check()->hasPaid);
        $this->assertSame(1, $psr->sent);
    }

    public function testDeactivate(): void
    {
        $client = self::signed(['licenseKey' => self::$seed['spare_license_key']]);
        $this->assertTrue($client->check()->hasPaid); // takes the slot
        $this->assertSame(1, $client->deactivate());
        $this->assertSame(0, $client->deactivate(['domain' => self::$seed['domains']['paid']]));
    }

    public function testRecord(): void
    {
        $usage = self::client()->record('meter.api_calls', 2, 'php-' . bin2hex(random_bytes(6)));
        $this->assertSame('meter.api_calls', $usage->meter);
        $this->assertSame(2, $usage->used);
        $this->assertSame(1000, $usage->limit);
        $this->assertSame(998, $usage->remaining);
        $this->assertNotNull($usage->resetsAt);

        $again = self::signed()->record('meter.api_calls', 1, 'php-once');
        $this->assertSame(3, $again->used);
        // The same idempotency key counts once and answers the first answer's data.
        $this->assertSame(3, self::signed()->record('meter.api_calls', 1, 'php-once')->used);
        $e = self::refusal(fn () => self::signed()->record('meter.api_calls', 1000, 'php-over'));
        $this->assertSame(429, $e->status);
        $this->assertSame(3, $e->data['used'] ?? null);
        $this->assertNotNull($e->retryAfter);
    }

    public function testOfflineFromTheStoredAnswer(): void
    {
        $server = LiveServer::get();
        $file = self::$dir . '/answers.json';
        $online = self::signed(['offline' => new FileStore($file)]);
        $paid = $online->check();
        $this->assertTrue($paid->hasPaid);
        $this->assertFalse($paid->offline);
        $this->assertSame(0600, fileperms($file) & 0777);
        // The unpaid domain's answer is not kept: offline, it fails closed.
        $this->assertFalse($online->check(['domain' => self::$seed['domains']['unpaid']])->hasPaid);

        $server->stop();
        try {
            // A later request (a new client, the same file) while the service is down.
            $offline = self::signed(['offline' => new FileStore($file)]);
            $result = $offline->check();
            $this->assertTrue($result->hasPaid);
            $this->assertTrue($result->offline);
            $this->assertEqualsWithDelta(time() + 72 * 3600, $result->expiresAt?->getTimestamp(), 120);
            $this->assertSame($paid->plan, $result->plan);

            $e = self::refusal(fn () => $offline->check(['domain' => self::$seed['domains']['unpaid']]));
            $this->assertSame('unreachable', $e->errorCode);

            // A stored answer edited on disk no longer verifies: closed.
            $edited = self::$dir . '/edited.json';
            $all = json_decode((string) file_get_contents($file), true);
            foreach ($all as $slot => $text) {
                $all[$slot] = str_replace('"has_paid\":true', '"has_paid\":true ', $text);
            }
            file_put_contents($edited, json_encode($all));
            $e = self::refusal(fn () => self::signed(['offline' => new FileStore($edited)])->check());
            $this->assertSame('unreachable', $e->errorCode);
        } finally {
            $server->start();
        }
    }

    public function testRefusalForgetsTheStoredAnswer(): void
    {
        $server = LiveServer::get();
        $file = self::$dir . '/refusal.json';
        $client = self::signed(['licenseKey' => self::$seed['spare_license_key'], 'offline' => new FileStore($file)]);
        $this->assertTrue($client->check()->hasPaid);
        $this->assertCount(1, json_decode((string) file_get_contents($file), true));

        $server->api('POST', '/project/' . self::$seed['project_id'] . '/licenses/' . self::$seed['spare_license_id'] . '/revoke');
        $e = self::refusal(fn () => $client->check());
        $this->assertSame('This license has been revoked.', $e->getMessage());
        $this->assertSame([], json_decode((string) file_get_contents($file), true));

        $server->stop();
        try {
            $e = self::refusal(fn () => $client->check());
            $this->assertSame('unreachable', $e->errorCode);
        } finally {
            $server->start();
            $server->api('POST', '/project/' . self::$seed['project_id'] . '/licenses/' . self::$seed['spare_license_id'] . '/reactivate');
        }
    }

    public function testOptionsAreChecked(): void
    {
        $this->assertSame('https://lg.example.com/api/v1', Client::normalizeBaseUrl('https://lg.example.com'));
        $this->assertSame('https://lg.example.com:8443/x/api/v1', Client::normalizeBaseUrl('https://lg.example.com:8443/x/api/'));
        $this->expectExceptionMessage('LicenseGate: offline mode needs publicKey and projectId (answers are verified before they are trusted)');
        self::client(['offline' => true]);
    }
}

/** A PSR-18 client and PSR-17 factories, by their methods alone (no psr/* package here). */
final class FakePsr18
{
    public int $sent = 0;

    public function createRequest(string $method, string $uri): FakeMessage
    {
        return new FakeMessage($method, $uri);
    }

    public function createStream(string $content): string
    {
        return $content;
    }

    public function sendRequest(FakeMessage $request): FakeMessage
    {
        $this->sent++;
        $headers = '';
        foreach ($request->headers as $name => $value) {
            $headers .= "{$name}: {$value}\r\n";
        }
        $context = stream_context_create(['http' => [
            'method' => $request->method,
            'header' => $headers,
            'content' => $request->body,
            'ignore_errors' => true,
        ]]);
        $body = (string) file_get_contents($request->uri, false, $context);
        $response = new FakeMessage('', '');
        $response->body = $body;
        foreach ($http_response_header as $i => $line) {
            if ($i === 0) {
                $response->status = (int) explode(' ', $line)[1];
            } elseif (str_contains($line, ':')) {
                [$name, $value] = explode(':', $line, 2);
                $response->headers[$name] = [trim($value)];
            }
        }
        return $response;
    }
}

final class FakeMessage
{
    public array $headers = [];
    public string $body = '';
    public int $status = 0;

    public function __construct(public string $method, public string $uri)
    {
    }

    public function withHeader(string $name, string $value): self
    {
        $copy = clone $this;
        $copy->headers[$name] = $value;
        return $copy;
    }

    public function withBody(string $body): self
    {
        $copy = clone $this;
        $copy->body = $body;
        return $copy;
    }

    public function getStatusCode(): int
    {
        return $this->status;
    }

    public function getHeaders(): array
    {
        return $this->headers;
    }

    public function getBody(): string
    {
        return $this->body;
    }
}
