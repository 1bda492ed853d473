import { describe, expect, it } from '@jest/globals';
import { canonicalIp, ipMatcher, parseIpEntry } from './address-lists.js';
import { normalizeDomain } from './domain-name.js';

describe('address rules', () => {
  it('parses addresses and CIDR ranges, v4 and v6', () => {
    expect(parseIpEntry(' 10.0.0.1 ')).toBe('10.0.0.1');
    expect(parseIpEntry('10.0.0.0/8')).toBe('10.0.0.0/8');
    expect(parseIpEntry('2001:db8::/32')).toBe('2001:db8::/32');
    expect(parseIpEntry('::ffff:127.0.0.1')).toBe('127.0.0.1');
    for (const bad of [
      '',
      '10.0.0',
      '10.0.0.0/33',
      '2001:db8::/129',
      'example.com',
      '1.2.3.4/8/1',
      '10.0.0.1/x',
    ]) {
      expect(parseIpEntry(bad)).toBeNull();
    }
  });

  it('matches addresses, ranges and v4-mapped v6 addresses', () => {
    const match = ipMatcher('192.168.1.10, 10.0.0.0/8, 2001:db8::/32');
    expect(match('192.168.1.10')).toBe(true);
    expect(match('192.168.1.11')).toBe(false);
    expect(match('10.200.3.4')).toBe(true);
    expect(match('::ffff:10.1.1.1')).toBe(true);
    expect(match('2001:db8:1::5')).toBe(true);
    expect(match('2001:db9::1')).toBe(false);
    expect(match('not an ip')).toBe(false);
    expect(canonicalIp('::ffff:127.0.0.1')).toBe('127.0.0.1');
  });
});

describe('normalizeDomain', () => {
  it('lowercases, drops the trailing dot and stores IDN as punycode', () => {
    expect(normalizeDomain(' Shop.Example.COM. ')).toBe('shop.example.com');
    expect(normalizeDomain('bücher.de')).toBe('xn--bcher-kva.de');
  });
  it('refuses schemes, ports, paths, IP literals and wildcards', () => {
    for (const bad of [
      'https://a.com',
      'a.com:80',
      'a.com/x',
      '10.0.0.1',
      '::1',
      '[::1]',
      '*.a.com',
      '',
      '-a.com',
      'a_b.com',
      1,
    ]) {
      expect(normalizeDomain(bad)).toBeNull();
    }
  });
});
