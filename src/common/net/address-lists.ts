import { BlockList, isIP } from 'node:net';

/** `::ffff:127.0.0.1` is the IPv4 address 127.0.0.1 for every address rule (docs/decisions.md#runtime-checks). */
export function canonicalIp(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1] : address;
}

/** One `allowed_ips` entry: an IPv4/IPv6 address or CIDR range. Returns its canonical text or null. */
export function parseIpEntry(entry: string): string | null {
  const [addr, bits, extra] = entry.trim().split('/');
  if (extra !== undefined || !addr) return null;
  const ip = canonicalIp(addr);
  const family = isIP(ip);
  if (family === 0) return null;
  if (bits === undefined) return ip;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)) return null;
  return `${ip}/${Number(bits)}`;
}

/** A matcher over a comma-separated list of addresses and CIDR ranges. */
export function ipMatcher(list: string): (address: string) => boolean {
  const blocks = new BlockList();
  for (const raw of list.split(',')) {
    const entry = parseIpEntry(raw);
    if (!entry) continue;
    const [ip, bits] = entry.split('/');
    const type = isIP(ip) === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) blocks.addAddress(ip, type);
    else blocks.addSubnet(ip, Number(bits), type);
  }
  return (address: string) => {
    const ip = canonicalIp(address);
    const family = isIP(ip);
    return family !== 0 && blocks.check(ip, family === 4 ? 'ipv4' : 'ipv6');
  };
}

/** ISO 3166-1 alpha-2 codes (officially assigned). */
export const ISO_COUNTRIES = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ ' +
    'CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR ' +
    'GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO ' +
    'JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR ' +
    'MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO ' +
    'RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV ' +
    'TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW'
  ).split(' '),
);

/** "a, b ,c" → "a,b,c" with each entry parsed; the first bad entry when there is one. */
export function parseList(
  raw: string | null,
  parse: (entry: string) => string | null,
): { value: string | null; bad?: string } {
  if (raw === null) return { value: null };
  const entries = raw
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const out: string[] = [];
  for (const entry of entries) {
    const parsed = parse(entry);
    if (parsed === null) return { value: null, bad: entry.slice(0, 64) };
    if (!out.includes(parsed)) out.push(parsed);
  }
  return { value: out.length > 0 ? out.join(',') : null };
}

/** An ISO 3166-1 alpha-2 code, uppercased, or null. */
export const parseCountry = (code: string): string | null =>
  ISO_COUNTRIES.has(code.toUpperCase()) ? code.toUpperCase() : null;

/**
 * The address a client is counted by: an IPv4 address as it is, an IPv6 address by its /64 (one
 * subscriber's network: the last 64 bits are theirs to rotate).
 */
export function clientGroup(address: string): string {
  const ip = canonicalIp(address);
  if (isIP(ip) !== 6) return ip;
  const [head, tail = ''] = ip.toLowerCase().split('::');
  const parts = (s: string) => (s === '' ? [] : s.split(':'));
  const left = parts(head);
  const right = parts(tail);
  // An embedded IPv4 tail (::1.2.3.4) is two groups; the /64 never reaches it.
  const width = (groups: string[]) => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const groups = ip.includes('::')
    ? [...left, ...Array<string>(8 - width(left) - width(right)).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
