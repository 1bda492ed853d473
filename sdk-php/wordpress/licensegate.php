<?php
/**
 * Plugin Name:       LicenseGate
 * Description:       Checks this site's license with LicenseGate: paid features, grace notices, offline answers. Settings → LicenseGate.
 * Version:           0.1.0
 * Requires PHP:      8.1
 * License:           MIT
 * Text Domain:       licensegate
 *
 * A drop-in: install it as a plugin, or `require` this file from a theme or plugin that bundles the
 * SDK (docs/wordpress.md).
 */

declare(strict_types=1);

if (!defined('ABSPATH')) {
    exit;
}

if (!defined('LICENSEGATE_DROPIN_LOADED')) {
    define('LICENSEGATE_DROPIN_LOADED', true);

    // The SDK beside this file (a packaged plugin: src/) or one level up (the sdk-php checkout).
    spl_autoload_register(static function (string $class): void {
        $map = ['LicenseGate\\WordPress\\' => [__DIR__ . '/'], 'LicenseGate\\' => [__DIR__ . '/src/', dirname(__DIR__) . '/src/']];
        foreach ($map as $prefix => $dirs) {
            if (str_starts_with($class, $prefix)) {
                foreach ($dirs as $dir) {
                    $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
                    if (is_file($file)) {
                        require $file;
                        return;
                    }
                }
                return;
            }
        }
    });

    /** Whether this site's license grants `$feature`: `true`, a positive number or a non-empty text, while paid. */
    function licensegate_can(string $feature): bool
    {
        return \LicenseGate\WordPress\Plugin::result()->can($feature);
    }

    /** The integer value of an entitlement (`seats`, `meter.api_calls`…) while paid, else null. */
    function licensegate_limit(string $feature): ?int
    {
        return \LicenseGate\WordPress\Plugin::result()->limit($feature);
    }

    /** Whether this site's license answers paid (grace included). */
    function licensegate_is_paid(): bool
    {
        return \LicenseGate\WordPress\Plugin::result()->hasPaid;
    }

    /** The cached answer: status, data, message, offline, staging (docs/wordpress.md). */
    function licensegate_status(): array
    {
        return \LicenseGate\WordPress\Plugin::answer();
    }

    \LicenseGate\WordPress\Plugin::boot();
}
