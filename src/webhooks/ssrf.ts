import { Injectable } from '@nestjs/common';
import type { LookupAddress } from 'node:dns';
import { lookup as systemLookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { AppConfig } from '../config/app-config.js';

/** IPv4 ranges that are not the public internet: "this network", private, CGNAT, loopback, link-local, reserved. */
const PRIVATE_V4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  // multicast, reserved and the broadcast address
  ['224.0.0.0', 3],
];

/**
 * IPv6 ranges refused outright. `::/96` holds the unspecified and loopback addresses and the
 * deprecated IPv4-compatible ones (`::127.0.0.1`, which some stacks still route to the IPv4 address).
 * IPv4-mapped addresses (`::ffff:0:0/96`) are deliberately absent: BlockList matches them against the
 * IPv4 rules, and a rule covering them would also match every plain IPv4 address.
 */
const PRIVATE_V6: ReadonlyArray<readonly [string, number]> = [
  ['::', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['3fff::', 20],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
];

const blocked = new BlockList();
for (const [net, bits] of PRIVATE_V4) {
  blocked.addSubnet(net, bits, 'ipv4');
  // The same IPv4 ranges inside NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:AABB:CCDD::) addresses, which
  // reach the embedded IPv4 address through a translator or relay.
  const [a, b, c, d] = net.split('.').map(Number);
  const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  blocked.addSubnet(`64:ff9b::${hex}`, 96 + bits, 'ipv6');
  blocked.addSubnet(`2002:${hex}::`, 16 + bits, 'ipv6');
}
for (const [net, bits] of PRIVATE_V6) blocked.addSubnet(net, bits, 'ipv6');

/** True unless `address` is an IP address on the public internet; anything that is not an IP is refused. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A connect-time refusal; its message is what the delivery log shows. */
export class PrivateAddressError extends Error {
  readonly code = 'ERR_WEBHOOK_PRIVATE_ADDRESS';
}

const refusedAt = (reason: string) =>
  `Refused: the webhook URL ${reason} (set WEBHOOK_ALLOW_PRIVATE=true to allow).`;

/**
 * Where webhooks may go. Unless WEBHOOK_ALLOW_PRIVATE, an address that is not public is refused on
 * write (advice for the user) and, what actually protects the network, at delivery on the address the
 * socket connects to: `lookup` is the connection's resolver, so no second lookup can answer differently
 * (DNS rebinding), and a lookup that fails or is slow ends the attempt instead of letting it through.
 */
@Injectable()
export class WebhookTargets {
  constructor(private readonly config: AppConfig) {}

  /** Every address of a host name, from the system resolver. Tests swap this to script DNS answers. */
  resolve(host: string): Promise<LookupAddress[]> {
    return systemLookup(host, { all: true });
  }

  /** resolve(), bounded by WEBHOOK_DNS_TIMEOUT_MS: a slow answer is an error, not a wait. */
  private async addresses(host: string): Promise<LookupAddress[]> {
    const ms = this.config.env.WEBHOOK_DNS_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const slow = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            Object.assign(new Error(`DNS lookup of ${host} timed out after ${ms} ms`), { code: 'ETIMEOUT' }),
          ),
        ms,
      );
    });
    try {
      return await Promise.race([this.resolve(host), slow]);
    } finally {
      clearTimeout(timer);
    }
  }

  private get allowPrivate(): boolean {
    return this.config.env.WEBHOOK_ALLOW_PRIVATE;
  }

  /**
   * Why a webhook_url must be refused on write, or null. An IP literal is checked as it is; a host
   * name is resolved and refused when any of its addresses is not public. A name that does not
   * resolve, or not within WEBHOOK_DNS_TIMEOUT_MS, is accepted: its receiver may not be in DNS yet,
   * and nothing can reach a private address through it, since every delivery checks again where it
   * connects (see docs/api.md, "Webhooks").
   */
  async refusal(url: string): Promise<string | null> {
    if (this.allowPrivate) return null;
    let host: string;
    try {
      host = hostOf(new URL(url));
    } catch {
      return 'is not a valid URL';
    }
    if (isIP(host) !== 0) return isPrivateAddress(host) ? `points at a private address (${host})` : null;
    if (host === 'localhost' || host.endsWith('.localhost')) return 'points at localhost';
    let addresses: LookupAddress[];
    try {
      addresses = await this.addresses(host);
    } catch {
      return null;
    }
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    return bad ? `resolves to a private address (${bad.address})` : null;
  }

  /**
   * The refusal of a delivery to an IP literal (which a socket connects to without a lookup), as the
   * delivery log words it, or null; host names are checked by `lookup` as the socket connects.
   */
  literalRefusal(url: URL): string | null {
    const host = hostOf(url);
    if (this.allowPrivate || isIP(host) === 0 || !isPrivateAddress(host)) return null;
    return refusedAt(`points at a private address (${host})`);
  }

  /**
   * The resolver a delivery's socket connects with (node's `lookup` connection option): the socket
   * gets only addresses checked here, and an error (a private address, a failed or slow lookup)
   * destroys it before it connects.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.connectable(hostname, options.family).then(
      (addresses) =>
        options.all ? callback(null, addresses) : callback(null, addresses[0].address, addresses[0].family),
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };

  private async connectable(hostname: string, family: number | string | undefined): Promise<LookupAddress[]> {
    const all = await this.addresses(hostname);
    const bad = this.allowPrivate ? undefined : all.find((a) => isPrivateAddress(a.address));
    if (bad) throw new PrivateAddressError(refusedAt(`resolves to a private address (${bad.address})`));
    const wanted = family === 4 || family === 6 ? all.filter((a) => a.family === family) : all;
    if (wanted.length === 0)
      throw Object.assign(
        new Error(`${hostname} has no ${wanted === all ? '' : `IPv${String(family)} `}address`),
        { code: 'ENOTFOUND' },
      );
    return wanted;
  }
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}
