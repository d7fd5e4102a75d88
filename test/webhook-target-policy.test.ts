/**
 * Where webhooks may go (SSRF policy): only global unicast addresses, whatever form the address
 * takes, checked on the URL when an endpoint is set and on the resolved addresses when connecting;
 * and an attempt's error never tells a blocked target from an unresolvable one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isPublicAddress, safeLookup, urlProblem } from '../src/net/target-policy.ts';
import { WebhookSender } from '../src/webhooks/send.ts';

const STRICT = { allowInsecure: false };

// Every special-purpose range a webhook must not reach, in the forms an attacker would try.
const BLOCKED: Array<[string, string]> = [
  ['0.0.0.0', 'IPv4 unspecified'],
  ['0.1.2.3', '"this network" 0/8'],
  ['127.0.0.1', 'IPv4 loopback'],
  ['127.255.255.254', 'IPv4 loopback, end of range'],
  ['10.0.0.1', 'RFC 1918'],
  ['172.16.0.1', 'RFC 1918'],
  ['172.31.255.255', 'RFC 1918, end of range'],
  ['192.168.1.1', 'RFC 1918'],
  ['169.254.169.254', 'link-local (cloud metadata)'],
  ['100.64.0.1', 'CGNAT'],
  ['100.127.255.255', 'CGNAT, end of range'],
  ['192.0.0.170', 'IETF protocol assignments (NAT64 discovery)'],
  ['192.0.2.1', 'TEST-NET-1'],
  ['198.18.0.1', 'benchmarking'],
  ['198.51.100.1', 'TEST-NET-2'],
  ['203.0.113.1', 'TEST-NET-3'],
  ['192.88.99.1', '6to4 relay anycast'],
  ['224.0.0.1', 'IPv4 multicast'],
  ['239.255.255.250', 'IPv4 multicast (SSDP)'],
  ['240.0.0.1', 'IPv4 reserved'],
  ['255.255.255.255', 'IPv4 broadcast'],
  ['::', 'IPv6 unspecified'],
  ['::1', 'IPv6 loopback'],
  ['::127.0.0.1', 'IPv4-compatible loopback'],
  ['::7f00:1', 'IPv4-compatible loopback, hex form'],
  ['::10.0.0.1', 'IPv4-compatible private'],
  ['::8.8.8.8', 'IPv4-compatible, even of a public address'],
  ['::2', 'IPv4-compatible ::/96'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
  ['::ffff:8.8.8.8', 'IPv4-mapped, even of a public address'],
  ['::ffff:0:127.0.0.1', 'IPv4-translated (RFC 6145)'],
  ['64:ff9b::127.0.0.1', 'NAT64 well-known prefix'],
  ['64:ff9b::8.8.8.8', 'NAT64 well-known prefix, public IPv4 inside'],
  ['64:ff9b:1::a00:1', 'NAT64 local-use prefix'],
  ['2002:7f00:1::1', '6to4 of a loopback address'],
  ['2002:808:808::1', '6to4 of a public address'],
  ['2001::1', 'Teredo'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ['2001:2::1', 'benchmarking'],
  ['2001:3::1', 'AMT'],
  ['2001:4:112::1', 'AS112'],
  ['2001:10::1', 'ORCHID (deprecated)'],
  ['2001:20::1', 'ORCHIDv2'],
  ['2001:1ff::1', 'IETF protocol assignments 2001::/23'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation (RFC 9637)'],
  ['2620:4f:8000::1', 'AS112 v6'],
  ['100::1', 'discard-only'],
  ['fc00::1', 'unique-local'],
  ['fd12:3456:789a::1', 'unique-local'],
  ['fe80::1', 'link-local'],
  ['febf::1', 'link-local, end of range'],
  ['fec0::1', 'site-local (deprecated)'],
  ['ff02::1', 'multicast, link scope'],
  ['ff0e::1', 'multicast, global scope'],
  ['5f00::1', 'SRv6 SIDs'],
  ['4000::1', 'outside global unicast 2000::/3'],
  ['e000::1', 'outside global unicast 2000::/3'],
  ['not-an-address', 'not an address'],
];

const PUBLIC = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.216.34',
  '2606:4700:4700::1111',
  '2a00:1450:4007:80f::200e',
  '2001:4860:4860::8888',
  '2c0f:fb50:4003::1',
];

describe('webhook target policy', () => {
  it('accepts only global unicast addresses, refusing every special-purpose range by range', () => {
    const wrong = BLOCKED.filter(([address]) => isPublicAddress(address)).map(([address, what]) => `${address} (${what})`);
    assert.deepEqual(wrong, [], 'these non-public addresses passed');
    const refused = PUBLIC.filter((address) => !isPublicAddress(address));
    assert.deepEqual(refused, [], 'these public addresses were refused');
  });

  it('refuses non-public literal hosts in a URL when the endpoint is set, in every spelling', () => {
    const urls = [
      ...BLOCKED.filter(([address]) => address !== 'not-an-address').map(
        ([address]) => `https://${address.includes(':') ? `[${address}]` : address}/hook`,
      ),
      'https://[::127.0.0.1]/hook',
      'https://[0:0:0:0:0:0:127.0.0.1]/hook',
      'https://[0000::0001]/hook',
      'https://2130706433/hook',
      'https://0x7f000001/hook',
      'https://0177.0.0.1/hook',
      'https://127.1/hook',
      'https://localhost/hook',
      'https://LOCALHOST./hook',
      'https://api.localhost/hook',
    ];
    const passed = urls.filter((url) => urlProblem(url, STRICT) === undefined);
    assert.deepEqual(passed, [], 'these URLs were accepted');
    for (const url of ['https://8.8.8.8/hook', 'https://[2606:4700:4700::1111]/hook', 'https://hooks.example.com/event-feed']) {
      assert.equal(urlProblem(url, STRICT), undefined, url);
    }
    assert.equal(urlProblem('https://[::1]/hook', { allowInsecure: true }), undefined, 'WEBHOOKS_ALLOW_INSECURE=1 lifts the address check');
  });

  describe('at connect time', () => {
    // Names an admin could try to map the internal network with: each resolves (in this fake DNS)
    // to a non-public address, or does not resolve at all.
    const fakeDns: Record<string, string | null> = {
      'db.internal.test': '10.0.0.7',
      'compat.internal.test': '::127.0.0.1',
      'nat64.internal.test': '64:ff9b::a00:7',
      'teredo.internal.test': '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      'ula.internal.test': 'fd00::7',
      'nowhere.internal.test': null,
    };
    let restore: () => Promise<void>;
    before(async () => {
      const dns = (await import('node:dns')).default;
      const { syncBuiltinESMExports } = await import('node:module');
      const real = dns.lookup;
      (dns as any).lookup = (hostname: string, options: any, callback: any) => {
        if (!(hostname in fakeDns)) return real(hostname, options, callback);
        const address = fakeDns[hostname] ?? null;
        if (address === null)
          return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }));
        const family = address.includes(':') ? 6 : 4;
        return options?.all ? callback(null, [{ address, family }]) : callback(null, address, family);
      };
      syncBuiltinESMExports();
      restore = async () => {
        (dns as any).lookup = real;
        syncBuiltinESMExports();
      };
    });
    after(() => restore());

    it('refuses every non-public resolved address, with one message whether blocked or unresolvable', async () => {
      const lookup = safeLookup(STRICT);
      const messages = new Set<string>();
      for (const hostname of Object.keys(fakeDns)) {
        const error = await new Promise<Error | null>((resolve) => lookup(hostname, {}, (err) => resolve(err)));
        assert.ok(error, `${hostname} refused`);
        assert.equal(error.message.includes(hostname), false, `the error does not name the host: ${error.message}`);
        messages.add(error.message);
      }
      assert.equal(messages.size, 1, `one message for all: ${[...messages].join(' | ')}`);
    });

    it('gives an attempt the same error for a blocked and an unresolvable target, naming neither the host nor its address', async () => {
      const sender = new WebhookSender(STRICT, 1000);
      try {
        const errors = new Map<string, string | null>();
        for (const hostname of Object.keys(fakeDns)) {
          const result = await sender.send({ url: `https://${hostname}/hook`, secrets: ['whsec_AAAA'], eventId: 'evt_x', body: '{}' }, 1);
          assert.equal(result.status, null, hostname);
          errors.set(hostname, result.error);
        }
        assert.equal(new Set(errors.values()).size, 1, `one error for all: ${JSON.stringify(Object.fromEntries(errors))}`);
        const error = String(errors.get('db.internal.test'));
        for (const secret of ['internal', '10.0.0.7', 'fd00', 'ENOTFOUND', 'getaddrinfo', 'non-public', 'resolves']) {
          assert.equal(error.includes(secret), false, `"${error}" reveals ${secret}`);
        }
        // A literal address is refused when sending too (an endpoint set while the policy was looser).
        const literal = await sender.send({ url: 'https://[::127.0.0.1]/hook', secrets: ['whsec_AAAA'], eventId: 'evt_x', body: '{}' }, 1);
        assert.equal(literal.status, null);
        assert.ok(literal.error, 'refused');
      } finally {
        await sender.close();
      }
    });
  });
});
