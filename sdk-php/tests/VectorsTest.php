<?php

declare(strict_types=1);

namespace LicenseGate\Tests;

use LicenseGate\CheckResult;
use LicenseGate\Signed;
use PHPUnit\Framework\TestCase;

/**
 * sdk/vectors/vectors.json: signed answers and offline tokens written by the service's own signing
 * code; the JS and Python SDKs judge the same file alike.
 */
final class VectorsTest extends TestCase
{
    private static function vectors(): array
    {
        return json_decode((string) file_get_contents(dirname(__DIR__, 2) . '/sdk/vectors/vectors.json'), true);
    }

    public static function answers(): iterable
    {
        foreach (self::vectors()['answers'] as $v) {
            yield $v['name'] => [$v];
        }
    }

    public static function tokens(): iterable
    {
        foreach (self::vectors()['tokens'] as $v) {
            yield $v['name'] => [$v];
        }
    }

    private static function judgeAnswer(array $v, string $publicKey): string
    {
        $all = self::vectors();
        $problem = Signed::answerProblem(
            $v['signature'],
            $v['date'],
            $v['nonce'],
            $v['method'],
            $v['target'],
            $all['license_key'],
            $v['domain'],
            $v['body'],
            Signed::publicKey($publicKey),
            $all['max_skew_seconds'],
            $all['now'],
        );
        return $problem === null ? 'ok' : $problem[0];
    }

    /** @dataProvider answers */
    public function testAnswer(array $v): void
    {
        $all = self::vectors();
        $this->assertSame($v['expect'], self::judgeAnswer($v, $all['public_key']));
        // The PEM form of the key judges alike.
        $this->assertSame($v['expect'], self::judgeAnswer($v, $all['public_key_pem']));
        if ($v['expect'] === 'ok') {
            $this->assertSame('signature', self::judgeAnswer($v, $all['other_public_key']));
        }
    }

    /** @dataProvider tokens */
    public function testToken(array $v): void
    {
        $all = self::vectors();
        $problem = Signed::tokenProblem(
            $v['token'],
            Signed::publicKey($all['public_key']),
            $all['project_id'],
            $all['license_key'],
            $v['domain'],
            $all['now'],
        );
        $this->assertSame($v['expect'], $problem ?? 'ok');
    }

    public function testThePaidAnswerReadsAsEverySdkReadsIt(): void
    {
        $all = self::vectors();
        $paid = array_values(array_filter($all['answers'], fn ($v) => $v['name'] === 'paid'))[0];
        $result = CheckResult::fromData(json_decode($paid['body'], true)['data']);
        $expected = $all['paid_result'];
        $this->assertTrue($result->hasPaid);
        $this->assertSame($expected['plan'], $result->plan);
        $this->assertSame($expected['entitlements'], $result->entitlements);
        $this->assertSame(strtotime($expected['grace_until']), $result->graceUntil?->getTimestamp());
        $this->assertTrue($result->can('feature.reports'));
        $this->assertTrue($result->can('seats'));
        $this->assertTrue($result->can('support'));
        $this->assertFalse($result->can('feature.export'));
        $this->assertFalse($result->can('empty'));
        $this->assertFalse($result->can('zero'));
        $this->assertFalse($result->can('not.granted'));
        $this->assertSame(5, $result->limit('seats'));
        $this->assertSame(0, $result->limit('zero'));
        $this->assertNull($result->limit('support'));
        $this->assertNull($result->limit('feature.reports'));

        $unpaid = array_values(array_filter($all['answers'], fn ($v) => $v['name'] === 'unpaid'))[0];
        $result = CheckResult::fromData(json_decode($unpaid['body'], true)['data']);
        $this->assertFalse($result->hasPaid);
        $this->assertNull($result->plan);
        $this->assertSame([], $result->entitlements);
        $this->assertSame('https://pay.example.com/renew?from=café', $result->redirectUrl);
    }

    public function testPublicKeyFormsAndRefusals(): void
    {
        $all = self::vectors();
        $raw = Signed::publicKey($all['public_key']);
        $this->assertSame(32, strlen($raw));
        $this->assertSame($raw, Signed::publicKey($all['public_key_pem']));
        $this->assertSame($raw, Signed::publicKey(['public_key_pem' => $all['public_key_pem']]));
        $this->expectException(\InvalidArgumentException::class);
        $this->expectExceptionMessage('Public key: pass the PEM, the base64 public_key or the signing-key array.');
        Signed::publicKey('bm90IGEga2V5');
    }

    public function testNoncesAndDomains(): void
    {
        $nonce = Signed::newNonce();
        $this->assertMatchesRegularExpression('/^[A-Za-z0-9_-]{22}$/', $nonce);
        $this->assertNotSame($nonce, Signed::newNonce());
        $this->assertSame('shop.example.com', Signed::normalizeDomain(' https://Shop.Example.com.:8443/x '));
        $this->assertSame('shop.example.com', Signed::normalizeDomain('SHOP.example.com'));
        $this->assertNull(Signed::normalizeDomain('  '));
    }
}
