<?php

declare(strict_types=1);

namespace LicenseGate\WordPress;

use LicenseGate\AnswerStore;

/**
 * The last verified answers in a WordPress option (not autoloaded): they outlive the transient,
 * which is what an outage of the service needs.
 */
final class OptionStore implements AnswerStore
{
    public function __construct(private readonly string $option)
    {
    }

    public function get(string $key): ?string
    {
        $all = get_option($this->option, []);
        return is_array($all) && is_string($all[$key] ?? null) ? $all[$key] : null;
    }

    public function set(string $key, string $value): void
    {
        $all = get_option($this->option, []);
        $all = is_array($all) ? $all : [];
        $all[$key] = $value;
        update_option($this->option, $all, false);
    }

    public function delete(string $key): void
    {
        $all = get_option($this->option, []);
        if (is_array($all) && array_key_exists($key, $all)) {
            unset($all[$key]);
            update_option($this->option, $all, false);
        }
    }
}
