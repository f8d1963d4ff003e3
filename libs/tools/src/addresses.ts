import { BlockList, isIP } from 'node:net';

/**
 * Which network addresses `http_fetch` may connect to (OWASP API7, SSRF; docs/adr/0021). IPv4: every
 * address except the special-purpose ranges below. IPv6: only global unicast (2000::/3) minus the
 * ranges inside it that tunnel or document; everything else (loopback, unspecified, link-local
 * fe80::/10, unique-local fc00::/7 with fd00:ec2::254, multicast, IPv4-mapped ::ffff:0:0/96,
 * NAT64 64:ff9b::/96) is outside 2000::/3 and refused.
 */
const V4_REFUSED: [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved or broadcast'],
];
const V6_REFUSED_IN_GLOBAL: [string, number, string][] = [
  ['2001::', 32, 'Teredo'],
  ['2001:db8::', 32, 'documentation'],
  ['2002::', 16, '6to4'],
];

const v4Lists = V4_REFUSED.map(([net, prefix, why]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, 'ipv4');
  return { list, why };
});
const v6Global = new BlockList();
v6Global.addSubnet('2000::', 3, 'ipv6');
const v6Lists = V6_REFUSED_IN_GLOBAL.map(([net, prefix, why]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, 'ipv6');
  return { list, why };
});

/** Host names refused whatever they resolve to (they name cloud metadata services). */
const REFUSED_NAMES = new Set([
  'metadata.google.internal',
  'metadata',
  'instance-data',
  'metadata.azure.com',
]);

/** Why `address` (an IP literal) must not be reached, or null when it may be. */
export function refusedAddress(address: string): string | null {
  const ip = address.replace(/^\[|\]$/g, '');
  const family = isIP(ip);
  if (family === 4) return v4Lists.find((r) => r.list.check(ip, 'ipv4'))?.why ?? null;
  if (family === 6) {
    if (!v6Global.check(ip, 'ipv6')) return 'not a global unicast IPv6 address';
    return v6Lists.find((r) => r.list.check(ip, 'ipv6'))?.why ?? null;
  }
  return 'not an IP address';
}

/** Whether a host name is refused by name (cloud metadata). */
export function refusedName(hostname: string): boolean {
  return REFUSED_NAMES.has(hostname.toLowerCase().replace(/\.$/, ''));
}

/**
 * Hosts exempt from the address checks (HTTP_FETCH_ALLOW_HOSTS): exact host names (as in the URL)
 * and IP addresses or CIDR ranges (matched against the address connected to). For tests and for
 * deployments that must reach an internal service on purpose.
 */
export class HostAllowList {
  private readonly names = new Set<string>();
  private readonly ranges = new BlockList();
  private hasRanges = false;

  constructor(entries: string[] = []) {
    for (const raw of entries) {
      const entry = raw.trim().toLowerCase();
      if (!entry) continue;
      const [ip, prefix] = entry.replace(/^\[|\]$/g, '').split('/');
      const family = isIP(ip);
      if (family === 0) {
        if (prefix !== undefined) throw new Error(`HTTP_FETCH_ALLOW_HOSTS: "${raw}" is not a CIDR range`);
        this.names.add(entry.replace(/\.$/, ''));
        continue;
      }
      const type = family === 4 ? 'ipv4' : 'ipv6';
      const bits = prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix);
      if (!Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128)) {
        throw new Error(`HTTP_FETCH_ALLOW_HOSTS: "${raw}" has an invalid prefix length`);
      }
      this.ranges.addSubnet(ip, bits, type);
      this.hasRanges = true;
    }
  }

  allowsName(hostname: string): boolean {
    return this.names.has(
      hostname
        .toLowerCase()
        .replace(/^\[|\]$/g, '')
        .replace(/\.$/, ''),
    );
  }

  allowsAddress(address: string): boolean {
    if (!this.hasRanges) return false;
    const family = isIP(address);
    return family !== 0 && this.ranges.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
}
