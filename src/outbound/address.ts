import ipaddr from 'ipaddr.js';

/**
 * Which addresses an outbound fetch may connect to. Only globally routable unicast passes:
 * ipaddr.js names every special range (RFC 1918 private, loopback, link-local with the cloud
 * metadata address 169.254.169.254, unique-local fc00::/7, CGNAT 100.64/10, multicast,
 * unspecified, broadcast, reserved, 6to4/Teredo/NAT64 that can wrap a private IPv4), and an
 * IPv4-mapped IPv6 address (::ffff:10.0.0.1) is judged as the IPv4 address it carries.
 */
export interface AddressPolicy {
  /** Operator setting for tests and single-machine setups: 127.0.0.0/8 and ::1 pass (nothing else private). */
  allowLoopback: boolean;
}

/** Why `address` is refused, or null when it may be connected to. */
export function refusedAddress(address: string, policy: AddressPolicy): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // process(): ::ffff:a.b.c.d becomes the IPv4 address a.b.c.d.
    parsed = ipaddr.process(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return `'${address}' is not an IP address`;
  }
  const range = parsed.range();
  if (range === 'unicast') return null;
  if (range === 'loopback' && policy.allowLoopback) return null;
  return `${parsed.toString()} is in a ${range} range, which this service does not connect to`;
}

/** Whether a URL host is an IP literal (no DNS involved), with the address without brackets. */
export function ipLiteral(hostname: string): string | null {
  const bare = hostname.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(bare) ? bare : null;
}
