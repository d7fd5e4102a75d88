import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { addressKey, clientAddress } from '../src/front-door/client-address.ts';

const request = (peer: string, forwardedFor?: string | string[]) =>
  ({
    socket: { remoteAddress: peer },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  }) as unknown as IncomingMessage;

describe('the address a request is limited by', () => {
  it('is the socket peer unless proxies are trusted: X-Forwarded-For is anyone to write', () => {
    assert.equal(clientAddress(request('203.0.113.9', '198.51.100.1'), 0), '203.0.113.9');
  });

  it('behind N trusted proxies, is the address the outermost of them saw', () => {
    const req = request('10.0.0.2', '198.51.100.7, 203.0.113.50, 10.0.0.1');
    assert.equal(clientAddress(req, 1), '10.0.0.1');
    assert.equal(clientAddress(req, 2), '203.0.113.50');
    assert.equal(clientAddress(req, 3), '198.51.100.7');
    assert.equal(clientAddress(req, 9), '198.51.100.7', 'fewer hops than trusted: the farthest one');
    assert.equal(clientAddress(request('10.0.0.2', ['198.51.100.7', '203.0.113.50']), 1), '203.0.113.50', 'repeated headers');
    assert.equal(clientAddress(request('10.0.0.2'), 1), '10.0.0.2', 'no header: the peer');
    assert.equal(clientAddress(request('10.0.0.2', 'not-an-address'), 1), '10.0.0.2', 'garbage counts as the proxy');
  });

  it('counts IPv6 by /64 and IPv4-mapped IPv6 as IPv4', () => {
    assert.equal(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
    assert.notEqual(addressKey('2001:db8:1:3::1'), addressKey('2001:db8:1:2::1'));
    assert.equal(addressKey('::ffff:192.0.2.1'), '192.0.2.1');
    assert.equal(addressKey('192.0.2.1'), '192.0.2.1');
  });
});
