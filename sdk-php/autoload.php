<?php

declare(strict_types=1);

// For projects without Composer: `require 'path/to/sdk-php/autoload.php';` loads LicenseGate\* from src/.
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'LicenseGate\\')) {
        $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen('LicenseGate\\'))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
