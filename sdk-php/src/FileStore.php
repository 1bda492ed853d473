<?php

declare(strict_types=1);

namespace LicenseGate;

/**
 * In a JSON file, so that the next request, or a server restarted during an outage, still has the
 * last verified answer. Written whole to a temporary file (mode 0600) and renamed over the old one
 * under an exclusive lock, so concurrent requests never leave half a file.
 */
final class FileStore implements AnswerStore
{
    public function __construct(private readonly string $path)
    {
        if ($path === '') {
            throw new \InvalidArgumentException('FileStore: a file path is required');
        }
    }

    public function get(string $key): ?string
    {
        return $this->read()[$key] ?? null;
    }

    public function set(string $key, string $value): void
    {
        $this->change(static function (array $all) use ($key, $value): array {
            $all[$key] = $value;
            return $all;
        });
    }

    public function delete(string $key): void
    {
        $this->change(static function (array $all) use ($key): array {
            unset($all[$key]);
            return $all;
        });
    }

    /** @return array<string, string> */
    private function read(): array
    {
        $text = @file_get_contents($this->path);
        $all = is_string($text) ? json_decode($text, true) : null;
        return is_array($all) ? array_filter($all, 'is_string') : [];
    }

    /** @param callable(array<string, string>): array<string, string> $apply */
    private function change(callable $apply): void
    {
        $lock = @fopen("{$this->path}.lock", 'c');
        if ($lock !== false) {
            flock($lock, LOCK_EX);
        }
        try {
            $tmp = $this->path . '.' . bin2hex(random_bytes(6)) . '.tmp';
            $old = umask(0077);
            try {
                $written = file_put_contents($tmp, json_encode($apply($this->read()), JSON_UNESCAPED_SLASHES));
            } finally {
                umask($old);
            }
            if ($written === false || !rename($tmp, $this->path)) {
                @unlink($tmp);
                throw new \RuntimeException("FileStore: could not write {$this->path}");
            }
        } finally {
            if ($lock !== false) {
                flock($lock, LOCK_UN);
                fclose($lock);
            }
        }
    }
}
