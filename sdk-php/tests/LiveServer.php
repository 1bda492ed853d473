<?php

declare(strict_types=1);

namespace LicenseGate\Tests;

/**
 * The live LicenseGate the tests call: scripts/sdk-live-server.mjs (a fresh SQLite file, a free
 * port, seeded through the CLI and the HTTP API), started once for the whole run.
 */
final class LiveServer
{
    private static ?self $instance = null;

    /** @var resource */
    private $process;
    /** @var array<int, resource> */
    private array $pipes = [];
    /** @var array<string, mixed> what the server was seeded with */
    public readonly array $seed;

    private function __construct()
    {
        $root = dirname(__DIR__, 2);
        $this->process = proc_open(
            ['node', "{$root}/scripts/sdk-live-server.mjs"],
            [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR],
            $this->pipes,
            $root,
        );
        $line = fgets($this->pipes[1]);
        $seed = is_string($line) ? json_decode($line, true) : null;
        if (!is_array($seed)) {
            throw new \RuntimeException('scripts/sdk-live-server.mjs did not start (is dist/ built? `npm run build`)');
        }
        $this->seed = $seed;
        register_shutdown_function(function (): void {
            fclose($this->pipes[0]);
            proc_close($this->process);
        });
    }

    public static function get(): self
    {
        return self::$instance ??= new self();
    }

    /** Stops the service (the database stays) until start(). */
    public function stop(): void
    {
        $this->command('stop', 'stopped');
    }

    public function start(): void
    {
        $this->command('start', 'started');
    }

    private function command(string $command, string $answer): void
    {
        fwrite($this->pipes[0], "{$command}\n");
        $line = trim((string) fgets($this->pipes[1]));
        if ($line !== $answer) {
            throw new \RuntimeException("sdk-live-server: {$command} answered {$line}");
        }
    }

    /** A management call with the seeded API key; the decoded envelope. */
    public function api(string $method, string $path): array
    {
        $context = stream_context_create(['http' => [
            'method' => $method,
            'header' => "Accept: application/json\r\nX-API-KEY: {$this->seed['api_key']}\r\n",
            'ignore_errors' => true,
        ]]);
        $body = file_get_contents($this->seed['base_url'] . $path, false, $context);
        return json_decode((string) $body, true);
    }
}
