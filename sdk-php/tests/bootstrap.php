<?php

declare(strict_types=1);

require __DIR__ . '/../autoload.php';
require __DIR__ . '/LiveServer.php';
// WordPress is not installed here: the drop-in's tests run against small stubs of the WP functions
// it calls, defined in the test bootstrap only.
require __DIR__ . '/wp-stubs.php';
