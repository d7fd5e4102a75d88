import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Where webhooks may go: public https only, unless WEBHOOKS_ALLOW_INSECURE=1 (development and tests). */
export interface TargetPolicy {
  allowInsecure: boolean;
}

/**
 * What an attempt records when its target is refused by the policy or does not resolve: the same
 * words for both, naming neither the host nor an address, so that the attempt errors list_webhooks
 * shows cannot be used to map the internal network (which names exist, which resolve to private
 * addresses).
 */
export const UNREACHABLE_TARGET = 'the target host could not be resolved to a public address';

// Global unicast (RFC 4291 §2.4): every other IPv6 block is special-purpose or unassigned.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Only ordinary public unicast addresses. ipaddr.js names the special-purpose ranges (private,
 * loopback, link-local, CGNAT, multicast, documentation, benchmarking, 6to4, Teredo, NAT64,
 * ORCHID, IPv4-mapped and -translated, discard…): any of them is refused. An IPv6 address must
 * also lie in 2000::/3, which refuses what ipaddr.js calls plain unicast outside it: the
 * IPv4-compatible ::/96 (`::127.0.0.1` reaches 127.0.0.1 on some stacks), site-local and
 * unassigned blocks. An IPv6 form embedding an IPv4 address is refused whatever that address is:
 * the IPv4 address itself is the public form of a public target.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.range() !== 'unicast') return false;
  return parsed.kind() === 'ipv4' || (parsed as ipaddr.IPv6).match(GLOBAL_UNICAST_V6);
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
  // The WHATWG parser has already normalized the host: 2130706433, 0x7f.1 and 127.1 are 127.0.0.1.
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (!policy.allowInsecure) {
    if (isIP(host) && !isPublicAddress(host))
      return 'url must point to a public address (not private, loopback, link-local or otherwise reserved)';
    if (host === 'localhost' || host.endsWith('.localhost')) return 'url points to a loopback address';
  }
  return undefined;
}

/**
 * A DNS lookup for outgoing connections that refuses non-public addresses. It runs at connect time,
 * on the very addresses the socket will use, so a name that resolves to a public address when
 * the endpoint is set and to 127.0.0.1 later (DNS rebinding) is still refused. A name that does
 * not resolve fails with the same error as one refused (UNREACHABLE_TARGET).
 */
export function safeLookup(policy: TargetPolicy): LookupFunction {
  // `reason` is for operators' logs (AttemptResult.errorCode): the workspace only ever sees UNREACHABLE_TARGET.
  const unreachable = (reason: string) => Object.assign(new Error(UNREACHABLE_TARGET), { code: 'EUNREACHABLETARGET', reason });
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(policy.allowInsecure ? err : unreachable(err.code ?? 'lookup failed'), '', 0);
      const allowed = policy.allowInsecure ? addresses : addresses.filter((a) => isPublicAddress(a.address));
      if (allowed.length === 0) return callback(unreachable('non-public address'), '', 0);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}
