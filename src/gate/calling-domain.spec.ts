import { afterEach, describe, expect, it, jest } from '@jest/globals';
import type { Request } from 'express';
import { utcDay } from '../licenses/licenses.service.js';
import { callingDomain, placeName, registrableDomain } from './calling-domain.js';

const request = (headers: Record<string, string>, query: Record<string, unknown> = {}, body?: unknown) =>
  ({ headers, query, body }) as unknown as Request;

describe('callingDomain', () => {
  it('takes the header first, then config, query, body, Origin and Referer', () => {
    const all = {
      'x-service-domain': 'Header.Example.com',
      origin: 'https://origin.example.com',
      referer: 'https://referer.example.com/x',
    };
    expect(
      callingDomain(
        request(all, { domain: 'query.example.com' }, { domain: 'body.example.com' }),
        'config.example.com',
      ).host,
    ).toBe('header.example.com');
    expect(
      callingDomain(
        request({ origin: all.origin }, { domain: 'query.example.com' }, { domain: 'body.example.com' }),
        'config.example.com',
      ).host,
    ).toBe('config.example.com');
    expect(
      callingDomain(
        request({ origin: all.origin }, { domain: 'query.example.com' }, { domain: 'body.example.com' }),
      ).host,
    ).toBe('query.example.com');
    expect(callingDomain(request({ origin: all.origin }, {}, { domain: 'body.example.com' })).host).toBe(
      'body.example.com',
    );
    expect(callingDomain(request({ origin: all.origin, referer: all.referer })).host).toBe(
      'origin.example.com',
    );
    expect(callingDomain(request({ referer: all.referer })).host).toBe('referer.example.com');
    expect(callingDomain(request({ 'x-service-domain': '  ' }))).toEqual({ host: null, local: false });
  });

  it('reads X-Service-Domain sent as UTF-8 bytes as UTF-8, and latin1 bytes as latin1', () => {
    // What Node gives for the header's bytes: one character per byte.
    const asNodeReadsIt = (bytes: Buffer) => bytes.toString('latin1');
    expect(
      callingDomain(request({ 'x-service-domain': asNodeReadsIt(Buffer.from('Bücher.example', 'utf8')) }))
        .host,
    ).toBe('xn--bcher-kva.example');
    expect(
      callingDomain(request({ 'x-service-domain': asNodeReadsIt(Buffer.from('bücher.example', 'latin1')) }))
        .host,
    ).toBe('xn--bcher-kva.example');
  });

  it('a name with two trailing dots or a port that is no port names no host', () => {
    for (const sent of [
      'shop.example.com..',
      'shop.example.com:0',
      'shop.example.com:65536',
      'shop.example.com:99999',
    ])
      expect([sent, callingDomain(request({ 'x-service-domain': sent })).host]).toEqual([sent, null]);
    expect(callingDomain(request({ 'x-service-domain': 'shop.example.com.' })).host).toBe('shop.example.com');
    expect(callingDomain(request({ 'x-service-domain': 'shop.example.com:65535' })).host).toBe(
      'shop.example.com',
    );
  });

  it('reduces URLs and host:port, and gives the same answer when asked again', () => {
    for (let round = 0; round < 2; round++) {
      expect(callingDomain(request({ 'x-service-domain': 'https://Shop.Example.com:8443/path' })).host).toBe(
        'shop.example.com',
      );
      expect(callingDomain(request({ 'x-service-domain': 'shop.example.com:8443' })).host).toBe(
        'shop.example.com',
      );
      expect(callingDomain(request({ 'x-service-domain': 'bücher.example' })).host).toBe(
        'xn--bcher-kva.example',
      );
      expect(callingDomain(request({ 'x-service-domain': 'app.localhost' }))).toEqual({
        host: 'app.localhost',
        local: true,
      });
      // An IP literal names no host, but is a place (not the domain a license is pinned to).
      expect(callingDomain(request({ 'x-service-domain': '127.0.0.1' }))).toEqual({
        host: null,
        local: true,
        ip: true,
      });
      expect(callingDomain(request({ 'x-service-domain': '[2001:db8::1]' }))).toEqual({
        host: null,
        local: false,
        ip: true,
      });
      expect(callingDomain(request({ 'x-service-domain': 'not a host' }))).toEqual({
        host: null,
        local: false,
      });
    }
  });

  it('stays correct when many distinct names pass through', () => {
    for (let i = 0; i < 12_000; i++)
      expect(callingDomain(request({ 'x-service-domain': `s${i}.example.com` })).host).toBe(
        `s${i}.example.com`,
      );
    expect(callingDomain(request({ 'x-service-domain': 's7.example.com' })).host).toBe('s7.example.com');
  });
});

describe('placeName and registrableDomain', () => {
  it('names the host, else the IP literal sent; nothing when neither was', () => {
    expect(placeName(callingDomain(request({ 'x-service-domain': 'Shop.Example.com' })))).toBe(
      'shop.example.com',
    );
    expect(placeName(callingDomain(request({ 'x-service-domain': '[2001:DB8::1]' })))).toBe('2001:db8::1');
    expect(placeName(callingDomain(request({ 'x-service-domain': '::ffff:127.0.0.1' })))).toBe('127.0.0.1');
    expect(placeName(callingDomain(request({ 'x-service-domain': 'not a host' })))).toBeNull();
    expect(placeName(callingDomain(request({})))).toBeNull();
  });

  it('counts by the Public Suffix List with private suffixes; a name without one is its own', () => {
    expect(registrableDomain('a.shop.example.co.uk')).toBe('example.co.uk');
    expect(registrableDomain('example.co.uk')).toBe('example.co.uk');
    expect(registrableDomain('me.github.io')).toBe('me.github.io');
    expect(registrableDomain('www.me.github.io')).toBe('me.github.io');
    expect(registrableDomain('you.github.io')).toBe('you.github.io');
    for (const own of ['203.0.113.7', '2001:db8::1', 'localhost', 'intranet', 'co.uk', 'github.io'])
      expect(registrableDomain(own)).toBe(own);
  });
});

describe('utcDay', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('follows the clock across midnight UTC, forwards and back', () => {
    jest.useFakeTimers({ now: Date.UTC(2026, 10, 21, 23, 59, 59, 999) });
    expect(utcDay()).toBe('2026-11-21');
    jest.setSystemTime(Date.UTC(2026, 10, 22, 0, 0, 0, 0));
    expect(utcDay()).toBe('2026-11-22');
    jest.setSystemTime(Date.UTC(2026, 10, 21, 12, 0, 0, 0));
    expect(utcDay()).toBe('2026-11-21');
    expect(utcDay(new Date(Date.UTC(2024, 1, 29, 23, 0)))).toBe('2024-02-29');
  });
});
