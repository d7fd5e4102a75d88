/**
 * One channel trust behind the feed's heads and the verified keys (changes/channel-trust.ts): on
 * SQLite, a write by another process forgets what both kept, and while that cannot be told
 * neither is believed; on Postgres, a lost channel forgets the heads but only shortens the keys.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HEARD_KEY_TTL_MS, VERIFIED_KEY_TTL_MS, VerifiedKeys } from '../src/auth/verified-keys.ts';
import type { Principal } from '../src/auth/principal.ts';
import { ChangeWatch } from '../src/feed/change-watch.ts';
import { ChannelTrust } from '../src/changes/channel-trust.ts';
import { FeedHeads } from '../src/feed/heads.ts';

const principal = { keyId: 'key_a', workspaceId: 'ws', permissions: new Set(['read']), mailboxes: null } as Principal;
const hash = Buffer.alloc(32);

describe('ChannelTrust: one state for heads and keys', () => {
  it('SQLite: another process writing forgets the heads and the keys together', () => {
    let version: string | undefined = 'v1';
    const { heads, keys } = new ChangeWatch({ othersWrites: () => version });
    keys.keep('key_a', principal, hash, keys.mark());
    heads.heard('ws', 3);
    assert.equal(heads.nothingAfter('ws', 3), true);
    assert.ok(keys.lookup('key_a'));
    version = 'v2'; // another process wrote: found by whichever asks first
    assert.equal(heads.nothingAfter('ws', 3), false);
    assert.equal(keys.lookup('key_a'), undefined);
  });

  it('SQLite: a write found by the heads also refuses a key lookup begun before it', () => {
    let version: string | undefined = 'v1';
    const { heads, keys } = new ChangeWatch({ othersWrites: () => version });
    const mark = keys.mark();
    version = 'v2';
    heads.nothingAfter('ws', 0);
    keys.keep('key_a', principal, hash, mark);
    assert.equal(keys.lookup('key_a'), undefined);
  });

  it('SQLite: while it cannot be told whether another process wrote, nothing kept is believed, and nothing is kept', () => {
    let version: string | undefined = 'v1';
    const { heads, keys } = new ChangeWatch({ othersWrites: () => version });
    keys.keep('key_a', principal, hash, keys.mark());
    heads.heard('ws', 3);
    version = undefined; // a transaction of this process holds the writing connection
    assert.equal(heads.nothingAfter('ws', 3), false);
    assert.equal(keys.lookup('key_a'), undefined);
    assert.equal(keys.mark(), undefined);
    version = 'v1'; // nobody else wrote meanwhile: what was kept holds again
    assert.equal(heads.nothingAfter('ws', 3), true);
    assert.ok(keys.lookup('key_a'));
  });

  it('Postgres: a lost channel forgets the heads, and keeps keys only for the short time', () => {
    let t = 0;
    const trust = new ChannelTrust();
    const heads = new FeedHeads(trust);
    const keys = new VerifiedKeys(trust, () => t);
    trust.open(async () => {});
    keys.keep('key_a', principal, hash, keys.mark());
    heads.heard('ws', 3);
    assert.equal(heads.nothingAfter('ws', 3), true);
    t = VERIFIED_KEY_TTL_MS + 1;
    assert.ok(keys.lookup('key_a'), 'heard: kept up to HEARD_KEY_TTL_MS');
    trust.lose();
    assert.equal(heads.nothingAfter('ws', 3), false);
    assert.equal(keys.lookup('key_a'), undefined, 'kept past the short time: dropped');
    t = 0;
    keys.keep('key_a', principal, hash, keys.mark());
    t = VERIFIED_KEY_TTL_MS;
    assert.ok(keys.lookup('key_a'), 'kept while the channel is down, for the short time');
    t = HEARD_KEY_TTL_MS;
    assert.equal(keys.lookup('key_a'), undefined);
  });

  it("the listener's callbacks reach the heads and the keys", () => {
    const changes = new ChangeWatch();
    changes.opened(async () => {});
    changes.keys.keep('key_a', principal, hash, changes.keys.mark());
    assert.ok(changes.keys.lookup('key_a'));
    changes.headMoved('ws', 3);
    assert.equal(changes.heads.nothingAfter('ws', 3), true);
    changes.keyChanged('key_a');
    assert.equal(changes.keys.lookup('key_a'), undefined);
    changes.lost();
    assert.equal(changes.live, false);
    assert.equal(changes.heads.nothingAfter('ws', 3), false);
  });
});
