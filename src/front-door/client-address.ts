import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';

/**
 * The address a request is limited by. By default the socket's peer: X-Forwarded-For is anyone's
 * to write. Behind proxies, `trustedHops` (TRUST_PROXY_HOPS) says how many of them append to
 * X-Forwarded-For: the address is the one the outermost trusted proxy saw (as express's
 * `trust proxy = n`). Addresses are limited by network, not host: an IPv6 client may hold a whole
 * /64, so IPv6 addresses count by /64; IPv4-mapped IPv6 counts as the IPv4 address.
 */
export function clientAddress(req: IncomingMessage, trustedHops: number): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  if (trustedHops <= 0) return peerKey(req.socket, peer);
  const header = req.headers['x-forwarded-for'];
  const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  // Nearest first: the socket's peer, then X-Forwarded-For from its right end.
  const chain = [peer, ...forwarded.reverse()];
  const candidate = chain[Math.min(trustedHops, chain.length - 1)]!;
  // A trusted proxy writes addresses; anything else was sent by the client: count it as the proxy's.
  return ipaddr.isValid(candidate) ? addressKey(candidate) : addressKey(peer);
}

// The peer's key, once per connection rather than once per request (a keep-alive connection
// carries many): parsing the address was a measurable part of an emit's CPU.
const peerKeys = new WeakMap<object, string>();
function peerKey(socket: object, peer: string): string {
  let key = peerKeys.get(socket);
  if (key === undefined) peerKeys.set(socket, (key = addressKey(peer)));
  return key;
}

/** The bucket name of an address: IPv4 as is, IPv6 by its /64. */
export function addressKey(address: string): string {
  if (!ipaddr.isValid(address)) return address.slice(0, 64);
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${parts.join(':')}::/64`;
}
