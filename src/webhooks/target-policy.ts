import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Where webhooks may go: public https only, unless WEBHOOKS_ALLOW_INSECURE=1 (development and tests). */
export interface TargetPolicy {
  allowInsecure: boolean;
}

/** Only ordinary public unicast addresses: no private, loopback, link-local, CGNAT, multicast, reserved… */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === 'unicast';
}

/** Why a URL may not receive webhooks, or undefined when it may (before any DNS resolution). */
export function urlProblem(raw: string, policy: TargetPolicy): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url is not a valid absolute URL';
  }
  if (url.protocol !== 'https:' && !(policy.allowInsecure && url.protocol === 'http:')) {
    return policy.allowInsecure ? 'url must use http or https' : 'url must use https';
  }
  if (url.username || url.password) return 'url must not carry credentials';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!policy.allowInsecure) {
    if (isIP(host) && !isPublicAddress(host)) return 'url points to a private, loopback or link-local address';
    if (host === 'localhost' || host.endsWith('.localhost')) return 'url points to a loopback address';
  }
  return undefined;
}

/**
 * A DNS lookup for outgoing connections that refuses non-public addresses. It runs at connect time,
 * on the very addresses the socket will use, so a name that resolves to a public address when
 * the endpoint is set and to 127.0.0.1 later (DNS rebinding) is still refused.
 */
export function safeLookup(policy: TargetPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const allowed = policy.allowInsecure ? addresses : addresses.filter((a) => isPublicAddress(a.address));
      if (allowed.length === 0) {
        return callback(Object.assign(new Error(`${hostname} resolves only to non-public addresses`), { code: 'EBLOCKEDADDRESS' }), '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}
