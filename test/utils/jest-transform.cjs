// Jest runs in CommonJS mode: on Node 20 it cannot load ESM natively next to CommonJS packages that
// require() ESM ones (e.g. @nestjs/throttler requiring @nestjs/common). So swc compiles our
// TypeScript, and the ESM files of ESM-only packages (Nest 12 and friends), to CommonJS.
// CommonJS files pass through untouched.
const { createHash } = require('node:crypto');
const { existsSync, readFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
const swc = require('@swc/core');

const packageTypes = new Map();
function packageType(dir) {
  if (packageTypes.has(dir)) return packageTypes.get(dir);
  const file = join(dir, 'package.json');
  let type;
  if (existsSync(file)) {
    type = JSON.parse(readFileSync(file, 'utf8')).type ?? 'commonjs';
  } else {
    const parent = dirname(dir);
    type = parent === dir ? 'commonjs' : packageType(parent);
  }
  packageTypes.set(dir, type);
  return type;
}

const isTypeScript = (filename) => filename.endsWith('.ts');
const isEsm = (filename) =>
  filename.endsWith('.mjs') || (filename.endsWith('.js') && packageType(dirname(filename)) === 'module');

module.exports = {
  process(source, filename) {
    const ts = isTypeScript(filename);
    if (!ts && !isEsm(filename)) return { code: source };
    const out = swc.transformSync(source, {
      filename,
      sourceMaps: 'inline',
      swcrc: false,
      jsc: {
        parser: ts ? { syntax: 'typescript', decorators: true } : { syntax: 'ecmascript' },
        transform: ts
          ? { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false }
          : undefined,
        target: 'es2023',
        keepClassNames: true,
      },
      module: { type: 'commonjs' },
    });
    return { code: out.code };
  },
  getCacheKey(source, filename) {
    return createHash('sha256')
      .update('v1')
      .update(swc.version)
      .update(filename)
      .update('\0')
      .update(source)
      .digest('hex');
  },
};
