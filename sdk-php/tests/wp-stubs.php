<?php

declare(strict_types=1);

// Small stand-ins for the WordPress functions the drop-in calls (WordPress itself is not installed
// here), backed by globals the tests read and set. Loaded by the test bootstrap only.

const ABSPATH = '/tmp/wordpress/';
const MINUTE_IN_SECONDS = 60;
const HOUR_IN_SECONDS = 3600;

$GLOBALS['wp_options'] = [];
$GLOBALS['wp_transients'] = [];
$GLOBALS['wp_actions'] = [];
$GLOBALS['wp_home_url'] = 'https://example.com';
$GLOBALS['wp_can'] = true;

function add_action(string $hook, callable $callback): void
{
    $GLOBALS['wp_actions'][$hook][] = $callback;
}

function do_action(string $hook, mixed ...$args): void
{
    foreach ($GLOBALS['wp_actions'][$hook] ?? [] as $callback) {
        $callback(...$args);
    }
}

function apply_filters(string $hook, mixed $value, mixed ...$args): mixed
{
    return $value;
}

function get_option(string $name, mixed $default = false): mixed
{
    return $GLOBALS['wp_options'][$name] ?? $default;
}

function update_option(string $name, mixed $value, ?bool $autoload = null): bool
{
    $old = $GLOBALS['wp_options'][$name] ?? null;
    $GLOBALS['wp_options'][$name] = $value;
    do_action("update_option_{$name}", $old, $value, $name);
    return true;
}

function get_transient(string $name): mixed
{
    $t = $GLOBALS['wp_transients'][$name] ?? null;
    return $t !== null && $t['expires'] > time() ? $t['value'] : false;
}

function set_transient(string $name, mixed $value, int $seconds): bool
{
    $GLOBALS['wp_transients'][$name] = ['value' => $value, 'expires' => time() + $seconds, 'seconds' => $seconds];
    return true;
}

function delete_transient(string $name): bool
{
    unset($GLOBALS['wp_transients'][$name]);
    return true;
}

function home_url(): string
{
    return $GLOBALS['wp_home_url'];
}

function admin_url(string $path = ''): string
{
    return 'https://example.com/wp-admin/' . $path;
}

function current_user_can(string $capability): bool
{
    return $GLOBALS['wp_can'];
}

function __(string $text, string $domain = 'default'): string
{
    return $text;
}

function esc_html(string $text): string
{
    return htmlspecialchars($text, ENT_QUOTES, 'UTF-8');
}

function esc_html__(string $text, string $domain = 'default'): string
{
    return esc_html($text);
}

function esc_attr(string $text): string
{
    return htmlspecialchars($text, ENT_QUOTES, 'UTF-8');
}

function esc_url(string $url): string
{
    return htmlspecialchars($url, ENT_QUOTES, 'UTF-8');
}

function sanitize_text_field(string $text): string
{
    return trim(preg_replace('/[\r\n\t ]+/', ' ', strip_tags($text)) ?? '');
}

function add_options_page(string $title, string $menu, string $capability, string $slug, callable $render): void
{
    $GLOBALS['wp_pages'][$slug] = $render;
}

function register_setting(string $group, string $name, array $args = []): void
{
    $GLOBALS['wp_settings'][$name] = $args;
}

function settings_fields(string $group): void
{
    echo "<input type=\"hidden\" name=\"option_page\" value=\"{$group}\">";
}

function submit_button(string $text = 'Save Changes', string $type = 'primary', string $name = 'submit'): void
{
    echo "<input type=\"submit\" name=\"{$name}\" class=\"button-{$type}\" value=\"" . esc_attr($text) . '">';
}

function delete_option(string $name): bool
{
    unset($GLOBALS['wp_options'][$name]);
    return true;
}

function wp_nonce_field(string $action): void
{
    echo "<input type=\"hidden\" name=\"_wpnonce\" value=\"nonce-{$action}\">";
}
