<?php

declare(strict_types=1);

namespace LicenseGate\Tests;

use LicenseGate\WordPress\Plugin;
use PHPUnit\Framework\TestCase;

require_once dirname(__DIR__) . '/wordpress/licensegate.php';

/**
 * The WordPress drop-in against the live LicenseGate, with the WP functions it calls stubbed in
 * tests/wp-stubs.php (WordPress itself is not installed here).
 */
final class WordPressTest extends TestCase
{
    private static array $seed;

    public static function setUpBeforeClass(): void
    {
        self::$seed = LiveServer::get()->seed;
    }

    protected function setUp(): void
    {
        $GLOBALS['wp_options'] = [];
        $GLOBALS['wp_transients'] = [];
        $GLOBALS['wp_can'] = true;
        $GLOBALS['wp_home_url'] = 'https://' . self::$seed['domains']['paid'];
    }

    private static function configure(array $over = []): void
    {
        update_option(Plugin::OPTION, $over + [
            'license_key' => self::$seed['wordpress_license_key'],
            'base_url' => self::$seed['base_url'],
            'project_id' => (string) self::$seed['project_id'],
            'public_key' => self::$seed['public_key_pem'],
        ]);
    }

    private static function notice(): string
    {
        ob_start();
        Plugin::notice();
        return (string) ob_get_clean();
    }

    /** The hosts the WordPress license has been used from. */
    private static function activations(): array
    {
        $path = '/project/' . self::$seed['project_id'] . '/licenses/' . self::$seed['wordpress_license_id'] . '/activations';
        return array_map(fn ($a) => $a['host'] === '' ? $a['domain'] : $a['host'], LiveServer::get()->api('GET', $path)['data']['data']);
    }

    public function testHooks(): void
    {
        foreach (['admin_menu', 'admin_init', 'admin_notices', 'update_option_licensegate_settings', 'admin_post_licensegate_remove'] as $hook) {
            $this->assertNotEmpty($GLOBALS['wp_actions'][$hook] ?? [], $hook);
        }
    }

    public function testUnconfigured(): void
    {
        $this->assertSame('unconfigured', licensegate_status()['status']);
        $this->assertFalse(licensegate_can('feature.reports'));
        $this->assertFalse(licensegate_is_paid());
        $this->assertStringContainsString(
            'LicenseGate: paste your license key to switch paid features on. <a href="https://example.com/wp-admin/options-general.php?page=licensegate">LicenseGate settings</a>',
            self::notice(),
        );
    }

    public function testPaidSiteIsCachedInATransient(): void
    {
        self::configure();
        $answer = licensegate_status();
        $this->assertSame('paid', $answer['status']);
        $this->assertFalse($answer['staging']);
        $this->assertTrue(licensegate_is_paid());
        $this->assertSame(12 * HOUR_IN_SECONDS, $GLOBALS['wp_transients'][Plugin::TRANSIENT]['seconds']);
        $this->assertSame('', self::notice());
        $this->assertContains(self::$seed['domains']['paid'], self::activations());
        $plan = self::$seed['plan'];
        $this->assertSame($plan !== null, licensegate_can('feature.reports'));
        $this->assertSame($plan === null ? null : 5, licensegate_limit('seats'));
        // The last verified answer is kept for outages, in an option of its own.
        $this->assertCount(1, get_option(Plugin::ANSWERS_OPTION));

        // From the transient: a service address that no longer answers is not even asked.
        $GLOBALS['wp_options'][Plugin::OPTION]['base_url'] = 'http://127.0.0.1:9';
        $this->assertSame('paid', licensegate_status()['status']);
        // Saving the settings forgets it.
        self::configure(['base_url' => 'http://127.0.0.1:9']);
        $answer = licensegate_status();
        $this->assertSame('paid', $answer['status']);
        $this->assertTrue($answer['offline']);
        $this->assertSame(5 * MINUTE_IN_SECONDS, $GLOBALS['wp_transients'][Plugin::TRANSIENT]['seconds']);
        $this->assertStringContainsString(
            '<div class="notice notice-info"><p>LicenseGate could not be reached: working from its last verified answer.</p></div>',
            self::notice(),
        );
    }

    public function testUnreachableWithoutAStoredAnswer(): void
    {
        self::configure(['base_url' => 'http://127.0.0.1:9']);
        $answer = licensegate_status();
        $this->assertSame('unreachable', $answer['status']);
        $this->assertFalse(licensegate_is_paid());
        $this->assertSame(5 * MINUTE_IN_SECONDS, $GLOBALS['wp_transients'][Plugin::TRANSIENT]['seconds']);
        $this->assertStringContainsString('<div class="notice notice-warning"><p>LicenseGate could not be reached: Could not reach LicenseGate: ', self::notice());
        $this->assertStringContainsString('Paid features are switched off until it answers.', self::notice());
    }

    public function testGraceNotice(): void
    {
        $GLOBALS['wp_home_url'] = 'https://' . self::$seed['domains']['grace'] . '/shop/';
        self::configure();
        $answer = licensegate_status();
        $this->assertSame('grace', $answer['status']);
        $this->assertTrue(licensegate_is_paid());
        $until = gmdate('Y-m-d H:i', (int) strtotime($answer['data']['grace_until']));
        $this->assertEqualsWithDelta(time() + 3 * 86400, strtotime($answer['data']['grace_until']), 600);
        $this->assertSame(
            '<div class="notice notice-warning"><p>LicenseGate: the last payment for this license did not go through. Everything keeps working until ' . $until . ' UTC; renew before then.</p></div>',
            self::notice(),
        );
    }

    public function testUnpaidNotice(): void
    {
        $GLOBALS['wp_home_url'] = 'https://' . self::$seed['domains']['unpaid'];
        self::configure();
        $this->assertSame('unpaid', licensegate_status()['status']);
        $this->assertFalse(licensegate_can('feature.reports'));
        $this->assertSame(
            '<div class="notice notice-error"><p>LicenseGate: this license is not paid. Paid features are switched off. <a href="https://pay.example.com/renew">Renew the license</a></p></div>',
            self::notice(),
        );
        // Only those who manage the site see it.
        $GLOBALS['wp_can'] = false;
        $this->assertSame('', self::notice());
    }

    public function testRevokedNotice(): void
    {
        self::configure(['license_key' => self::$seed['revoked_license_key']]);
        $this->assertSame('refused', licensegate_status()['status']);
        $this->assertStringStartsWith(
            '<div class="notice notice-error"><p>LicenseGate refused this site: This license has been revoked. <a href="https://pay.example.com/renew">Renew the license</a>',
            self::notice(),
        );
    }

    public function testStagingTakesNoSlot(): void
    {
        $before = self::activations();
        foreach (['http://shop.local', 'http://localhost:8080', 'https://staging.paid.example.com', 'http://wp.test'] as $home) {
            $GLOBALS['wp_home_url'] = $home;
            $GLOBALS['wp_transients'] = [];
            self::configure();
            $answer = licensegate_status();
            $this->assertTrue($answer['staging'], $home);
            // The project-level answer: this project itself has not paid (its domains have).
            $this->assertSame('unpaid', $answer['status'], $home);
            $this->assertStringContainsString(
                sprintf("Staging site (%s): checked without taking one of the license&#039;s sites.", Plugin::host()),
                self::notice(),
            );
        }
        $this->assertSame($before, self::activations());
    }

    public function testStagingPatterns(): void
    {
        $patterns = Plugin::DEFAULT_STAGING;
        foreach (['shop.local', 'a.b.local', 'wp.test', 'localhost', 'staging.example.com'] as $host) {
            $this->assertTrue(Plugin::isStaging($host, $patterns), $host);
        }
        foreach (['example.com', 'local', 'shop.local.example.com', 'mystaging.example.com', 'localhost.example.com'] as $host) {
            $this->assertFalse(Plugin::isStaging($host, $patterns), $host);
        }
        $this->assertTrue(Plugin::isStaging('dev.shop.example', "dev.*\r\n"));
        $this->assertFalse(Plugin::isStaging('shop.local', ''));
    }

    public function testSettingsScreen(): void
    {
        self::configure(['license_key' => '<b>key</b>']);
        $clean = Plugin::sanitize([
            'license_key' => ' <b>abc</b> ',
            'public_key' => self::$seed['public_key_pem'] . '<script>',
            'staging_hosts' => "*.local\n<x>dev.*",
        ]);
        $this->assertSame('abc', $clean['license_key']);
        $this->assertSame(self::$seed['public_key_pem'] . 'script', $clean['public_key']);
        $this->assertSame("*.local\nxdev.*", $clean['staging_hosts']);

        ($GLOBALS['wp_actions']['admin_menu'][0])();
        ($GLOBALS['wp_actions']['admin_init'][0])();
        $this->assertSame([Plugin::class, 'sanitize'], $GLOBALS['wp_settings'][Plugin::OPTION]['sanitize_callback']);
        ob_start();
        ($GLOBALS['wp_pages']['licensegate'])();
        $html = (string) ob_get_clean();
        $this->assertStringContainsString('name="licensegate_settings[license_key]" value="&lt;b&gt;key&lt;/b&gt;"', $html);
        $this->assertStringContainsString('name="licensegate_settings[staging_hosts]">*.local', $html);
        $this->assertStringContainsString('Status: <strong>refused</strong>', $html);
        $this->assertStringContainsString('<input type="hidden" name="action" value="licensegate_remove"><input type="hidden" name="_wpnonce" value="nonce-licensegate_remove">', $html);
        $this->assertStringContainsString('value="Remove the license from this site"', $html);
    }

    public function testRemoveTheLicenseFreesTheSite(): void
    {
        self::configure();
        $this->assertSame('paid', licensegate_status()['status']);
        $this->assertContains(self::$seed['domains']['paid'], self::activations());
        $this->assertNotEmpty(get_option(Plugin::ANSWERS_OPTION));

        $this->assertSame('LicenseGate: the license was removed from this site and 1 of its sites freed.', Plugin::removeLicense());
        $this->assertNotContains(self::$seed['domains']['paid'], self::activations());
        $this->assertSame('', Plugin::settings()['license_key']);
        $this->assertSame(self::$seed['base_url'], Plugin::settings()['base_url']);
        $this->assertFalse(get_option(Plugin::ANSWERS_OPTION));
        // Nothing takes the slot again: the site no longer asks.
        $this->assertSame('unconfigured', licensegate_status()['status']);
        $this->assertNotContains(self::$seed['domains']['paid'], self::activations());
        $this->assertSame('LicenseGate: there is no license key to remove.', Plugin::removeLicense());

        $GLOBALS['wp_home_url'] = 'http://shop.local';
        self::configure();
        $this->assertSame(
            'LicenseGate: the license was removed from this staging site (it held none of its sites).',
            Plugin::removeLicense(),
        );
        self::configure(['license_key' => self::$seed['revoked_license_key']]);
        $GLOBALS['wp_home_url'] = 'https://' . self::$seed['domains']['paid'];
        $this->assertSame(
            'LicenseGate could not free this site: This license has been revoked. The key is kept.',
            Plugin::removeLicense(),
        );
        $this->assertSame(self::$seed['revoked_license_key'], Plugin::settings()['license_key']);
    }
}
