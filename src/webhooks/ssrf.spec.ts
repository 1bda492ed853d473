import { describe, expect, it } from '@jest/globals';
import type { LookupAddress } from 'node:dns';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../config/app-config.js';
import { isPrivateAddress, WebhookTargets } from './ssrf.js';

/** The host as node's URL parser hands it over (IPv6 in canonical form, no brackets). */
const hostOf = (url: string) => new URL(url).hostname.replace(/^\[|\]$/g, '');

/** WebhookTargets with the default configuration (WEBHOOK_ALLOW_PRIVATE off) unless `env` says otherwise. */
function targets(
  answers: Record<string, LookupAddress[] | Error | 'hang'>,
  env: Record<string, string> = {},
) {
  const config = loadConfig(
    { APP_KEY: randomBytes(32).toString('base64'), WEBHOOK_DNS_TIMEOUT_MS: '200', ...env },
    () => undefined,
  );
  const t = new WebhookTargets(config);
  const asked: string[] = [];
  t.resolve = (host: string) => {
    asked.push(host);
    const answer = answers[host];
    if (answer === undefined)
      return Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));
    if (answer === 'hang') return new Promise<never>(() => undefined);
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  };
  return { t, asked, config };
}

/** Calls the connect-time lookup as net.connect does; resolves with its callback's arguments. */
function connectLookup(t: WebhookTargets, host: string, options: { all?: boolean; family?: number } = {}) {
  return new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family?: number }>(
    (resolve) => {
      t.lookup(host, { family: options.family ?? 0, all: options.all ?? false }, (error, address, family) =>
        resolve({ error, address, family }),
      );
    },
  );
}

const v4 = (address: string): LookupAddress => ({ address, family: 4 });
const v6 = (address: string): LookupAddress => ({ address, family: 6 });

describe('isPrivateAddress', () => {
  it.each([
    ['8.8.8.8'],
    ['93.184.216.34'],
    ['1.1.1.1'],
    ['100.63.255.255'],
    ['100.128.0.0'],
    ['172.15.255.255'],
    ['172.32.0.0'],
    ['223.255.255.255'],
    ['2606:4700:4700::1111'],
    ['2001:4860:4860::8888'],
    ['::ffff:8.8.8.8'],
    ['64:ff9b::808:808'],
    ['2002:808:808::1'],
  ])('%s is public', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });

  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', '"this network"'],
    ['10.0.0.5', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['192.0.0.8', 'IETF protocol assignments'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.251', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'IPv6 unspecified'],
    ['::1', 'IPv6 loopback'],
    ['fc00::1', 'ULA'],
    ['fd12:3456:789a::1', 'ULA'],
    ['fe80::1', 'IPv6 link-local'],
    ['ff02::1', 'IPv6 multicast'],
    ['fec0::1', 'site-local (deprecated)'],
    ['2001:db8::1', 'documentation'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:10.1.2.3', 'IPv4-mapped private'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped link-local, hex'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::7f00:1', 'IPv4-compatible loopback, hex'],
    ['::8.8.8.8', 'IPv4-compatible (deprecated, any)'],
    ['64:ff9b::127.0.0.1', 'NAT64 of loopback'],
    ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of 169.254.169.254'],
    ['64:ff9b:1::a00:1', 'local-use NAT64'],
    ['2002:7f00:1::', '6to4 of 127.0.0.1'],
    ['2002:c0a8:101::1', '6to4 of 192.168.1.1'],
    ['2002:a9fe:a9fe::', '6to4 of 169.254.169.254'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['localhost', 'not an IP address'],
    ['', 'empty'],
  ])('%s is refused (%s)', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    ['http://[::127.0.0.1]/hook'],
    ['http://[::ffff:127.0.0.1]/hook'],
    ['http://[0:0:0:0:0:ffff:7f00:1]/hook'],
    ['http://[64:ff9b::10.0.0.1]/hook'],
    ['http://2130706433/hook'],
    ['http://0x7f.1/hook'],
    ['http://127.1/hook'],
    ['http://017700000001/hook'],
  ])('%s, as the URL parser hands it over, is refused', (url) => {
    expect(isPrivateAddress(hostOf(url))).toBe(true);
  });
});

describe('WebhookTargets.refusal (on write, default configuration)', () => {
  it.each([
    ['https://93.184.216.34/hook'],
    ['http://8.8.8.8/hook'],
    ['https://[2606:4700:4700::1111]/hook'],
    ['https://[::ffff:8.8.8.8]/hook'],
  ])('accepts the public literal %s without a lookup', async (url) => {
    const { t, asked } = targets({});
    expect(await t.refusal(url)).toBeNull();
    expect(asked).toEqual([]);
  });

  it.each([
    ['http://127.0.0.1:1234/x', 'points at a private address (127.0.0.1)'],
    ['http://10.0.0.5/x', 'points at a private address (10.0.0.5)'],
    ['http://[::127.0.0.1]/x', 'points at a private address (::7f00:1)'],
    ['http://[::ffff:7f00:1]/x', 'points at a private address (::ffff:7f00:1)'],
    ['http://[64:ff9b::a9fe:a9fe]/x', 'points at a private address (64:ff9b::a9fe:a9fe)'],
    ['http://[2002:c0a8:101::]/x', 'points at a private address (2002:c0a8:101::)'],
    ['http://localhost/x', 'points at localhost'],
    ['http://app.localhost/x', 'points at localhost'],
  ])('refuses %s', async (url, reason) => {
    const { t } = targets({});
    expect(await t.refusal(url)).toBe(reason);
  });

  it('resolves a host name: public addresses pass, any private one refuses it', async () => {
    const { t, asked } = targets({
      'hooks.example.com': [v4('93.184.216.34'), v6('2606:2800:220:1:248:1893:25c8:1946')],
      'mixed.example.com': [v4('93.184.216.34'), v4('10.0.0.7')],
      'mapped.example.com': [v6('::ffff:127.0.0.1')],
    });
    expect(await t.refusal('https://hooks.example.com/hook')).toBeNull();
    expect(await t.refusal('https://mixed.example.com/hook')).toBe(
      'resolves to a private address (10.0.0.7)',
    );
    expect(await t.refusal('https://mapped.example.com/hook')).toBe(
      'resolves to a private address (::ffff:127.0.0.1)',
    );
    expect(asked).toEqual(['hooks.example.com', 'mixed.example.com', 'mapped.example.com']);
  });

  it('accepts a name that does not resolve, or not within WEBHOOK_DNS_TIMEOUT_MS (delivery checks again)', async () => {
    const { t } = targets({ 'slow.example.com': 'hang' });
    expect(await t.refusal('https://nowhere.example.com/hook')).toBeNull();
    const started = Date.now();
    expect(await t.refusal('https://slow.example.com/hook')).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('refuses nothing with WEBHOOK_ALLOW_PRIVATE=true', async () => {
    const { t } = targets({}, { WEBHOOK_ALLOW_PRIVATE: 'true' });
    expect(await t.refusal('http://127.0.0.1/x')).toBeNull();
    expect(await t.refusal('http://localhost/x')).toBeNull();
  });
});

describe('WebhookTargets at delivery (default configuration)', () => {
  it('literalRefusal: private IP literals are refused before connecting; public ones and names are left to connect', () => {
    const { t } = targets({});
    expect(t.literalRefusal(new URL('http://[::127.0.0.1]/x'))).toBe(
      'Refused: the webhook URL points at a private address (::7f00:1) (set WEBHOOK_ALLOW_PRIVATE=true to allow).',
    );
    expect(t.literalRefusal(new URL('http://169.254.169.254/latest'))).toMatch(
      /private address \(169\.254\.169\.254\)/,
    );
    expect(t.literalRefusal(new URL('http://8.8.8.8/hook'))).toBeNull();
    expect(t.literalRefusal(new URL('https://[2606:4700:4700::1111]/hook'))).toBeNull();
    expect(t.literalRefusal(new URL('https://hooks.example.com/hook'))).toBeNull();
  });

  it('lookup hands the socket public addresses, one or all as asked, filtered by family', async () => {
    const { t } = targets({ 'hooks.example.com': [v4('93.184.216.34'), v6('2606:4700:4700::1111')] });
    expect(await connectLookup(t, 'hooks.example.com')).toEqual({
      error: null,
      address: '93.184.216.34',
      family: 4,
    });
    expect(await connectLookup(t, 'hooks.example.com', { all: true })).toEqual({
      error: null,
      address: [v4('93.184.216.34'), v6('2606:4700:4700::1111')],
      family: undefined,
    });
    expect(await connectLookup(t, 'hooks.example.com', { family: 6 })).toEqual({
      error: null,
      address: '2606:4700:4700::1111',
      family: 6,
    });
  });

  it('lookup refuses a name with any private address: the socket gets nothing', async () => {
    const { t } = targets({
      'rebound.example.com': [v4('93.184.216.34'), v4('127.0.0.1')],
      'nat64.example.com': [v6('64:ff9b::a00:1')],
    });
    for (const [host, address] of [
      ['rebound.example.com', '127.0.0.1'],
      ['nat64.example.com', '64:ff9b::a00:1'],
    ]) {
      const { error, address: given } = await connectLookup(t, host, { all: true });
      expect(given).toBe('');
      expect(error?.code).toBe('ERR_WEBHOOK_PRIVATE_ADDRESS');
      expect(error?.message).toBe(
        `Refused: the webhook URL resolves to a private address (${address}) (set WEBHOOK_ALLOW_PRIVATE=true to allow).`,
      );
    }
  });

  it('lookup fails closed when the lookup fails or is slow', async () => {
    const { t } = targets({
      'slow.example.com': 'hang',
      'broken.example.com': Object.assign(new Error('queryA ESERVFAIL'), { code: 'ESERVFAIL' }),
    });
    const failed = await connectLookup(t, 'broken.example.com', { all: true });
    expect(failed.error?.code).toBe('ESERVFAIL');
    expect(failed.address).toBe('');
    const started = Date.now();
    const slow = await connectLookup(t, 'slow.example.com', { all: true });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(slow.error?.code).toBe('ETIMEOUT');
    expect(slow.error?.message).toBe('DNS lookup of slow.example.com timed out after 200 ms');
    expect(slow.address).toBe('');
  });

  it('lookup of a name with no address (of the family asked) fails', async () => {
    const { t } = targets({ 'empty.example.com': [], 'v4only.example.com': [v4('93.184.216.34')] });
    const empty = await connectLookup(t, 'empty.example.com', { all: true });
    expect([empty.error?.code, empty.error?.message, empty.address]).toEqual([
      'ENOTFOUND',
      'empty.example.com has no address',
      '',
    ]);
    const noV6 = await connectLookup(t, 'v4only.example.com', { family: 6 });
    expect([noV6.error?.code, noV6.error?.message]).toEqual([
      'ENOTFOUND',
      'v4only.example.com has no IPv6 address',
    ]);
  });

  it('with WEBHOOK_ALLOW_PRIVATE=true, lookup hands over private addresses too', async () => {
    const { t } = targets({ 'hooks.internal': [v4('10.0.0.7')] }, { WEBHOOK_ALLOW_PRIVATE: 'true' });
    expect(await connectLookup(t, 'hooks.internal')).toEqual({ error: null, address: '10.0.0.7', family: 4 });
    expect(t.literalRefusal(new URL('http://127.0.0.1/x'))).toBeNull();
  });
});
