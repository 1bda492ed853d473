<?php

declare(strict_types=1);

namespace LicenseGate;

/** In memory, for the life of the process (the default; a PHP request is short: prefer FileStore). */
final class MemoryStore implements AnswerStore
{
    /** @var array<string, string> */
    private array $values = [];

    public function get(string $key): ?string
    {
        return $this->values[$key] ?? null;
    }

    public function set(string $key, string $value): void
    {
        $this->values[$key] = $value;
    }

    public function delete(string $key): void
    {
        unset($this->values[$key]);
    }
}
