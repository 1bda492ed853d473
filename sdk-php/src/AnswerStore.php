<?php

declare(strict_types=1);

namespace LicenseGate;

/**
 * Where the client keeps the last verified paid answer per license, project and domain (its
 * signed parts, as a string). What it keeps is verified again every time it is read, so a store only
 * needs to keep strings.
 */
interface AnswerStore
{
    public function get(string $key): ?string;

    public function set(string $key, string $value): void;

    public function delete(string $key): void;
}
