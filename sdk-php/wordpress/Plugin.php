<?php

declare(strict_types=1);

namespace LicenseGate\WordPress;

use LicenseGate\CheckResult;
use LicenseGate\Client;
use LicenseGate\LicenseGateException;

/**
 * The WordPress drop-in (docs/wordpress.md): the key on a settings screen, the answer cached in a
 * transient, an admin notice during grace and when not paid, staging hosts that take no slot.
 *
 * Staging hosts (`*.local`, `*.test`, `localhost`, `staging.*` by default) ask the service with
 * `action=check_project` and no calling domain: the key is still checked (revoked, expired, and the
 * license's or project's own paid flag answer) but no activation is recorded, so a staging copy never
 * takes one of the license's `max_domains` slots. Nothing is decided locally: a production site
 * renamed to look like staging gets what the license itself has paid for, nothing more.
 */
final class Plugin
{
    public const OPTION = 'licensegate_settings';
    public const TRANSIENT = 'licensegate_answer';
    public const ANSWERS_OPTION = 'licensegate_answers';
    public const DEFAULT_STAGING = "*.local\n*.test\nlocalhost\nstaging.*";

    /** Hooks the settings screen, the notice and the cache's invalidation. */
    public static function boot(): void
    {
        add_action('admin_menu', [self::class, 'menu']);
        add_action('admin_init', [self::class, 'registerSetting']);
        add_action('admin_notices', [self::class, 'notice']);
        add_action('update_option_' . self::OPTION, [self::class, 'forget']);
        add_action('admin_post_licensegate_remove', [self::class, 'handleRemove']);
    }

    /**
     * The settings, the vendor's constants first: a theme or plugin that bundles the drop-in sets
     * LICENSEGATE_BASE_URL, LICENSEGATE_PROJECT_ID and LICENSEGATE_PUBLIC_KEY, and its customer only
     * pastes the key.
     *
     * @return array{license_key: string, base_url: string, project_id: string, public_key: string, staging_hosts: string}
     */
    public static function settings(): array
    {
        $saved = get_option(self::OPTION, []);
        $saved = is_array($saved) ? $saved : [];
        $value = static fn (string $constant, string $key): string => defined($constant)
            ? (string) constant($constant)
            : trim((string) ($saved[$key] ?? ''));
        return [
            'license_key' => trim((string) ($saved['license_key'] ?? '')),
            'base_url' => $value('LICENSEGATE_BASE_URL', 'base_url'),
            'project_id' => $value('LICENSEGATE_PROJECT_ID', 'project_id'),
            'public_key' => $value('LICENSEGATE_PUBLIC_KEY', 'public_key'),
            'staging_hosts' => (string) ($saved['staging_hosts'] ?? self::DEFAULT_STAGING),
        ];
    }

    /** This site's host name, from its home URL. */
    public static function host(): string
    {
        return strtolower((string) parse_url((string) home_url(), PHP_URL_HOST));
    }

    /** Whether `$host` matches one of the staging patterns (one a line; `*` is any run of characters). */
    public static function isStaging(string $host, string $patterns): bool
    {
        foreach (preg_split('/[\r\n,]+/', $patterns) ?: [] as $pattern) {
            $pattern = strtolower(trim($pattern));
            if ($pattern === '') {
                continue;
            }
            $regex = '/^' . str_replace('\*', '.*', preg_quote($pattern, '/')) . '$/';
            if (preg_match($regex, $host) === 1) {
                return true;
            }
        }
        return false;
    }

    /**
     * The answer for this site, from the transient when there is one: `status` (`paid`, `grace`,
     * `unpaid`, `refused`, `unreachable`, `unconfigured`), `data` (the has-paid fields), `message`,
     * `offline`, `staging`, `checked_at`.
     *
     * @return array<string, mixed>
     */
    public static function answer(): array
    {
        $cached = get_transient(self::TRANSIENT);
        if (is_array($cached)) {
            return $cached;
        }
        $answer = self::ask();
        $seconds = match ($answer['status']) {
            'paid', 'grace' => 12 * HOUR_IN_SECONDS,
            'unreachable' => 5 * MINUTE_IN_SECONDS,
            default => HOUR_IN_SECONDS,
        };
        if ($answer['offline']) {
            $seconds = 5 * MINUTE_IN_SECONDS; // back online as soon as the service is
        }
        set_transient(self::TRANSIENT, $answer, (int) apply_filters('licensegate_cache_seconds', $seconds, $answer));
        return $answer;
    }

    /** The last answer as a CheckResult (for can() and limit()). */
    public static function result(): CheckResult
    {
        return CheckResult::fromData(self::answer()['data'] ?? []);
    }

    /** Forgets the cached answer: the next page asks again. */
    public static function forget(): void
    {
        delete_transient(self::TRANSIENT);
    }

    /** @return array<string, mixed> */
    private static function ask(): array
    {
        $settings = self::settings();
        $host = self::host();
        $staging = self::isStaging($host, $settings['staging_hosts']);
        $answer = ['data' => [], 'message' => null, 'offline' => false, 'staging' => $staging, 'checked_at' => time()];
        if ($settings['license_key'] === '' || $settings['base_url'] === '') {
            return ['status' => 'unconfigured'] + $answer;
        }
        try {
            // A project-level check gets no offline token (it names no domain): staging keeps none.
            $result = self::client($settings, $staging ? null : $host, !$staging)->check(['checkProject' => $staging]);
        } catch (LicenseGateException $e) {
            $status = $e->status === 0 || $e->status >= 500 ? 'unreachable' : 'refused';
            return [
                'status' => $status,
                'data' => ['has_paid' => false, 'redirect_url' => $e->redirectUrl],
                'message' => $e->getMessage(),
            ] + $answer;
        }
        $data = [
            'has_paid' => $result->hasPaid,
            'is_test_license' => $result->isTestLicense,
            'redirect_url' => $result->redirectUrl,
            'grace_until' => $result->graceUntil?->format('Y-m-d\TH:i:s\Z'),
            'plan' => $result->plan,
            'entitlements' => $result->entitlements,
        ];
        $status = !$result->hasPaid ? 'unpaid' : ($result->graceUntil !== null ? 'grace' : 'paid');
        return ['status' => $status, 'data' => $data, 'offline' => $result->offline] + $answer;
    }

    /**
     * A client for the settings: verifying when the public key and project id are set, and then
     * keeping the last verified answer for outages when `$offline`.
     *
     * @param array<string, string> $settings
     */
    private static function client(array $settings, ?string $domain, bool $offline): Client
    {
        $options = [
            'baseUrl' => $settings['base_url'],
            'licenseKey' => $settings['license_key'],
            'domain' => $domain,
            'timeout' => 5,
        ];
        if ($settings['public_key'] !== '' && $settings['project_id'] !== '') {
            $options += ['publicKey' => $settings['public_key'], 'projectId' => (int) $settings['project_id']];
            if ($offline) {
                $options['offline'] = new OptionStore(self::ANSWERS_OPTION);
            }
        }
        return new Client($options);
    }

    /**
     * "Remove the license from this site" (before moving it, or giving the license to another site):
     * frees the slot this host holds and forgets the key, so no later page takes the slot again.
     * Answers the sentence to show.
     */
    public static function removeLicense(): string
    {
        $settings = self::settings();
        if ($settings['license_key'] === '' || $settings['base_url'] === '') {
            return __('LicenseGate: there is no license key to remove.', 'licensegate');
        }
        $host = self::host();
        if (!self::isStaging($host, $settings['staging_hosts'])) {
            try {
                $freed = self::client($settings, $host, false)->deactivate();
            } catch (LicenseGateException $e) {
                return sprintf(__('LicenseGate could not free this site: %s The key is kept.', 'licensegate'), $e->getMessage());
            }
        }
        $saved = get_option(self::OPTION, []);
        update_option(self::OPTION, ['license_key' => ''] + (is_array($saved) ? $saved : []));
        delete_option(self::ANSWERS_OPTION);
        self::forget();
        return isset($freed)
            ? sprintf(__('LicenseGate: the license was removed from this site and %d of its sites freed.', 'licensegate'), $freed)
            : __('LicenseGate: the license was removed from this staging site (it held none of its sites).', 'licensegate');
    }

    /** admin-post.php?action=licensegate_remove: the settings screen's remove button. */
    public static function handleRemove(): void
    {
        if (!current_user_can('manage_options')) {
            wp_die(esc_html__('You may not change LicenseGate settings.', 'licensegate'), 403);
        }
        check_admin_referer('licensegate_remove');
        set_transient('licensegate_flash', self::removeLicense(), MINUTE_IN_SECONDS);
        wp_safe_redirect(admin_url('options-general.php?page=licensegate'));
        exit;
    }

    /** The admin notice, for those who manage options: grace, not paid, refused, unreachable, not set up. */
    public static function notice(): void
    {
        if (!current_user_can('manage_options')) {
            return;
        }
        $answer = self::answer();
        $data = $answer['data'];
        $renew = is_string($data['redirect_url'] ?? null)
            ? sprintf(' <a href="%s">%s</a>', esc_url($data['redirect_url']), esc_html__('Renew the license', 'licensegate'))
            : '';
        $settings = sprintf(
            ' <a href="%s">%s</a>',
            esc_url(admin_url('options-general.php?page=licensegate')),
            esc_html__('LicenseGate settings', 'licensegate'),
        );
        [$kind, $text] = match ($answer['status']) {
            'grace' => ['warning', sprintf(
                /* translators: %s: the date the grace ends */
                esc_html__('LicenseGate: the last payment for this license did not go through. Everything keeps working until %s; renew before then.', 'licensegate'),
                esc_html(gmdate('Y-m-d H:i', (int) strtotime((string) $data['grace_until'])) . ' UTC'),
            )],
            'unpaid' => ['error', esc_html__('LicenseGate: this license is not paid. Paid features are switched off.', 'licensegate') . $renew],
            'refused' => ['error', esc_html(sprintf(__('LicenseGate refused this site: %s', 'licensegate'), (string) $answer['message'])) . $renew . $settings],
            'unreachable' => ['warning', esc_html(sprintf(__('LicenseGate could not be reached: %s Paid features are switched off until it answers.', 'licensegate'), (string) $answer['message']))],
            'unconfigured' => ['info', esc_html__('LicenseGate: paste your license key to switch paid features on.', 'licensegate') . $settings],
            default => [null, ''],
        };
        if ($answer['offline'] && $kind === null) {
            [$kind, $text] = ['info', esc_html__('LicenseGate could not be reached: working from its last verified answer.', 'licensegate')];
        }
        if ($answer['staging']) {
            $staging = sprintf(
                esc_html__('Staging site (%s): checked without taking one of the license\'s sites.', 'licensegate'),
                esc_html(self::host()),
            );
            [$kind, $text] = [$kind ?? 'info', $text === '' ? $staging : "{$text} {$staging}"];
        }
        if ($kind !== null) {
            printf('<div class="notice notice-%s"><p>%s</p></div>', esc_attr($kind), $text);
        }
    }

    public static function menu(): void
    {
        add_options_page('LicenseGate', 'LicenseGate', 'manage_options', 'licensegate', [self::class, 'page']);
    }

    public static function registerSetting(): void
    {
        register_setting('licensegate', self::OPTION, ['type' => 'array', 'sanitize_callback' => [self::class, 'sanitize']]);
    }

    /**
     * @param mixed $input
     * @return array<string, string>
     */
    public static function sanitize($input): array
    {
        $input = is_array($input) ? $input : [];
        $clean = [];
        foreach (['license_key', 'base_url', 'project_id', 'public_key'] as $key) {
            $clean[$key] = trim(sanitize_text_field((string) ($input[$key] ?? '')));
        }
        // A PEM spans lines: keep its line breaks, drop anything else.
        $clean['public_key'] = trim(preg_replace('/[^A-Za-z0-9+\/=\s-]/', '', (string) ($input['public_key'] ?? '')) ?? '');
        $clean['staging_hosts'] = trim(preg_replace('/[^a-z0-9.*\-\r\n]/i', '', (string) ($input['staging_hosts'] ?? '')) ?? '');
        return $clean;
    }

    /** The settings screen (Settings → LicenseGate). */
    public static function page(): void
    {
        if (!current_user_can('manage_options')) {
            return;
        }
        $settings = self::settings();
        $answer = self::answer();
        $name = self::OPTION;
        echo '<div class="wrap"><h1>LicenseGate</h1><form method="post" action="options.php">';
        settings_fields('licensegate');
        echo '<table class="form-table" role="presentation">';
        $row = static function (string $key, string $label, bool $locked, string $field) use ($settings): void {
            printf('<tr><th scope="row"><label for="licensegate-%s">%s</label></th><td>', esc_attr($key), esc_html($label));
            echo $locked ? '<code>' . esc_html($settings[$key]) . '</code>' : $field;
            echo '</td></tr>';
        };
        $input = static fn (string $key) => sprintf(
            '<input type="text" class="regular-text" id="licensegate-%1$s" name="%2$s[%1$s]" value="%3$s">',
            esc_attr($key),
            esc_attr($name),
            esc_attr($settings[$key]),
        );
        $row('license_key', __('License key', 'licensegate'), false, $input('license_key'));
        $row('base_url', __('Service address', 'licensegate'), defined('LICENSEGATE_BASE_URL'), $input('base_url'));
        $row('project_id', __('Project id', 'licensegate'), defined('LICENSEGATE_PROJECT_ID'), $input('project_id'));
        $row('public_key', __('Public key', 'licensegate'), defined('LICENSEGATE_PUBLIC_KEY'), sprintf(
            '<textarea class="large-text code" rows="4" id="licensegate-public_key" name="%s[public_key]">%s</textarea>',
            esc_attr($name),
            esc_html($settings['public_key']),
        ));
        $row('staging_hosts', __('Staging hosts', 'licensegate'), false, sprintf(
            '<textarea class="regular-text code" rows="4" id="licensegate-staging_hosts" name="%s[staging_hosts]">%s</textarea><p class="description">%s</p>',
            esc_attr($name),
            esc_html($settings['staging_hosts']),
            esc_html__('One a line; * matches anything. These sites are checked without taking one of the license\'s sites.', 'licensegate'),
        ));
        echo '</table>';
        submit_button();
        echo '</form>';
        $flash = get_transient('licensegate_flash');
        if (is_string($flash)) {
            delete_transient('licensegate_flash');
            printf('<div class="notice notice-info"><p>%s</p></div>', esc_html($flash));
        }
        if ($settings['license_key'] !== '') {
            printf('<form method="post" action="%s">', esc_url(admin_url('admin-post.php')));
            echo '<input type="hidden" name="action" value="licensegate_remove">';
            wp_nonce_field('licensegate_remove');
            printf(
                '<p>%s</p>',
                esc_html__('Moving this site, or giving the license to another one? Remove it here first: this frees the site it holds.', 'licensegate'),
            );
            submit_button(__('Remove the license from this site', 'licensegate'), 'secondary', 'licensegate-remove');
            echo '</form>';
        }
        printf(
            '<p>%s <strong>%s</strong></p></div>',
            esc_html__('Status:', 'licensegate'),
            esc_html($answer['status'] . ($answer['data']['plan'] ?? null ? " ({$answer['data']['plan']})" : '')),
        );
    }
}
