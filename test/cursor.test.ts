import assert from 'node:assert/strict';
import { createCipheriv, createHash, createHmac, hkdfSync } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ApiError } from '../src/base/errors.ts';
import { CursorCodec } from '../src/feed/cursor.ts';
import { PageTokenCodec } from '../src/feed/page-token.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const SECRET = 'test-secret-0123456789abcdefghijklmnopqrstuvwxyz';
const OTHER_SECRET = 'other-secret-0123456789abcdefghijklmnopqrstuvwxyz';
const WS = 'ws_01M6DMBE00KKNS70D02MHHS0KA';
const OTHER_WS = 'ws_01M6DMBE00KKNS70D02MHHS0KB';
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

const codec = new CursorCodec(SECRET);

/** Cursor layout: version 1 | position 16 | workspace 26 | mac 16 (src/feed/signed-position.ts). */
const CURSOR_BYTES = 59;
const CURSOR_LENGTH = 79;
const PAGE_TOKEN_DOMAIN = Buffer.from('event-feed list_events page_token\0', 'latin1');

const hmac = (secret: string, bytes: Buffer) => createHmac('sha256', secret).update(bytes).digest().subarray(0, 16);

/** A token of the version-1 layout (seq in clear), as the service issued them before: version 1 | seq 8 | workspace 26 | extra | mac 16. */
function legacyToken(
  workspaceId: string,
  seq: bigint,
  { secret = SECRET, domain = Buffer.alloc(0), extra = Buffer.alloc(0), version = 1 } = {},
): string {
  const body = Buffer.alloc(35 + extra.length);
  body.writeUInt8(version, 0);
  body.writeBigUInt64BE(seq, 1);
  body.write(workspaceId.slice(3), 9, 26, 'latin1');
  extra.copy(body, 35);
  return Buffer.concat([body, hmac(secret, Buffer.concat([domain, body]))]).toString('base64url');
}

/** A version-2 token built from the documented layout alone, with any version byte. */
function documentedToken(
  workspaceId: string,
  seq: bigint,
  { secret = SECRET, domain = Buffer.alloc(0), extra = Buffer.alloc(0), version = 2 } = {},
): string {
  const key = Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), 'event-feed token position cipher', 32));
  const block = Buffer.alloc(16);
  block.writeBigUInt64BE(seq, 0);
  createHash('sha256').update(domain).update(workspaceId).digest().copy(block, 8, 0, 8);
  const cipher = createCipheriv('aes-256-ecb', key, null).setAutoPadding(false);
  const body = Buffer.concat([
    Buffer.from([version]),
    cipher.update(block),
    cipher.final(),
    Buffer.from(workspaceId.slice(3), 'latin1'),
    extra,
  ]);
  return Buffer.concat([body, hmac(secret, Buffer.concat([domain, body]))]).toString('base64url');
}

/** The reason a decode was not refused as invalid_argument/400, or null when it was. */
function refusal(decode: () => unknown): { ok: true; message: string } | { ok: false; why: string } {
  try {
    const seq = decode();
    return { ok: false, why: `accepted, seq ${String(seq)}` };
  } catch (err) {
    if (!(err instanceof ApiError)) return { ok: false, why: `threw ${(err as Error)?.name}: ${(err as Error)?.message}` };
    if (err.code !== 'invalid_argument' || err.status !== 400) return { ok: false, why: `ApiError ${err.code}/${err.status}` };
    return { ok: true, message: err.message };
  }
}

/** Asserts every candidate is refused with invalid_argument; lists all that were not. */
function assertAllRefused(candidates: Array<{ label: string; cursor: string }>, workspaceId = WS, c = codec): string[] {
  const failures: string[] = [];
  const messages: string[] = [];
  for (const { label, cursor } of candidates) {
    const r = refusal(() => c.decode(workspaceId, cursor));
    if (!r.ok) failures.push(`${label} (${JSON.stringify(cursor)}): ${r.why}`);
    else messages.push(r.message);
  }
  assert.deepEqual(failures.slice(0, 20), [], `${failures.length} of ${candidates.length} not refused`);
  for (const message of messages) assert.match(message, /cursor/);
  return messages;
}

describe('CursorCodec', () => {
  const seqs = [
    0,
    1,
    2,
    42,
    255,
    256,
    65_535,
    65_536,
    2 ** 31 - 1,
    2 ** 32,
    2 ** 40 + 7,
    Number.MAX_SAFE_INTEGER - 1,
    Number.MAX_SAFE_INTEGER,
  ];

  it('round-trips seq 0, small and large seqs', () => {
    for (const seq of seqs) {
      const cursor = codec.encode(WS, seq);
      assert.equal(codec.decode(WS, cursor), seq, `seq ${seq}`);
      assert.match(cursor, /^[A-Za-z0-9_-]+$/, 'base64url without padding');
      assert.equal(cursor.length, CURSOR_LENGTH, 'fixed length');
    }
  });

  it('is deterministic: one position, one string; another instance with the same secret agrees', () => {
    const again = new CursorCodec(SECRET);
    for (const seq of seqs) {
      assert.equal(codec.encode(WS, seq), codec.encode(WS, seq));
      assert.equal(again.encode(WS, seq), codec.encode(WS, seq));
      assert.equal(again.decode(WS, codec.encode(WS, seq)), seq);
    }
  });

  it('gives distinct strings for distinct positions, workspaces and secrets', () => {
    const other = new CursorCodec(OTHER_SECRET);
    const all = new Set<string>();
    for (const seq of seqs) {
      all.add(codec.encode(WS, seq));
      all.add(codec.encode(OTHER_WS, seq));
      all.add(other.encode(WS, seq));
      assert.notEqual(codec.encode(WS, seq), other.encode(WS, seq), `seq ${seq}: different secrets`);
    }
    assert.equal(all.size, seqs.length * 3);
  });

  it('refuses every single-character substitution at every position', () => {
    for (const seq of [0, 7, 123_456_789]) {
      const cursor = codec.encode(WS, seq);
      const candidates = [];
      for (let i = 0; i < cursor.length; i++) {
        for (const ch of ALPHABET) {
          if (ch === cursor[i]) continue;
          candidates.push({ label: `seq ${seq} pos ${i} → ${ch}`, cursor: cursor.slice(0, i) + ch + cursor.slice(i + 1) });
        }
      }
      assert.equal(candidates.length, CURSOR_LENGTH * 63);
      assertAllRefused(candidates);
    }
  });

  it('refuses every single-bit flip and every single-byte change of the decoded bytes', () => {
    for (const seq of [0, 7, 123_456_789]) {
      const bytes = Buffer.from(codec.encode(WS, seq), 'base64url');
      assert.equal(bytes.length, CURSOR_BYTES);
      const candidates = [];
      for (let i = 0; i < bytes.length; i++) {
        for (let bit = 0; bit < 8; bit++) {
          const copy = Buffer.from(bytes);
          copy[i] = copy[i]! ^ (1 << bit);
          candidates.push({ label: `seq ${seq} byte ${i} bit ${bit}`, cursor: copy.toString('base64url') });
        }
        for (const value of [0x00, 0xff, (bytes[i]! + 1) & 0xff]) {
          if (value === bytes[i]) continue;
          const copy = Buffer.from(bytes);
          copy[i] = value;
          candidates.push({ label: `seq ${seq} byte ${i} = ${value}`, cursor: copy.toString('base64url') });
        }
      }
      const messages = assertAllRefused(candidates);
      assert.ok(
        messages.every((m) => m.startsWith('after is not a valid cursor')),
        messages.find((m) => !m.startsWith('after is not a valid cursor')),
      );
    }
  });

  it('refuses every truncation (each prefix length, and dropped leading characters)', () => {
    const cursor = codec.encode(WS, 99);
    const candidates = [];
    for (let n = 0; n < cursor.length; n++) candidates.push({ label: `prefix ${n}`, cursor: cursor.slice(0, n) });
    for (let n = 1; n < cursor.length; n++) candidates.push({ label: `suffix from ${n}`, cursor: cursor.slice(n) });
    assertAllRefused(candidates);
  });

  it('refuses the empty string, garbage and non-base64url characters', () => {
    const cursor = codec.encode(WS, 5);
    const garbage = [
      '',
      ' ',
      'x',
      'abc',
      'not a cursor',
      'null',
      'undefined',
      '0',
      'c1.AAAAAAAAAAI.3kTq9xQf',
      '!'.repeat(CURSOR_LENGTH),
      'A'.repeat(CURSOR_LENGTH),
      'A'.repeat(CURSOR_LENGTH - 1) + 'B',
      '_'.repeat(CURSOR_LENGTH),
      'A'.repeat(1000),
      ` ${cursor}`,
      `${cursor} `,
      `${cursor}\n`,
      `${cursor.slice(0, 30)} ${cursor.slice(31)}`,
      `${cursor.slice(0, 30)}.${cursor.slice(31)}`,
      `${cursor.slice(0, 30)}é${cursor.slice(31)}`,
      `${cursor.slice(0, 30)}\u0000${cursor.slice(31)}`,
      `${cursor}${cursor}`,
      cursor.split('').reverse().join(''),
      encodeURIComponent(`${cursor}+`),
      Buffer.from(cursor).toString('base64url'),
    ];
    assertAllRefused(garbage.map((g, i) => ({ label: `garbage ${i}`, cursor: g })));
  });

  it('refuses the standard-base64 spelling (+ and /) of a cursor, and padding', () => {
    // Find cursors whose base64url text uses "-" and "_", so the standard alphabet differs.
    let dash: string | undefined;
    let underscore: string | undefined;
    for (let seq = 0; seq < 10_000 && (!dash || !underscore); seq++) {
      const c = codec.encode(WS, seq);
      if (!dash && c.includes('-')) dash = c;
      if (!underscore && c.includes('_')) underscore = c;
    }
    assert.ok(dash && underscore, 'found cursors with - and _');
    const candidates = [dash, underscore].map((c, i) => ({
      label: `standard base64 ${i}`,
      cursor: Buffer.from(c, 'base64url').toString('base64'),
    }));
    for (const { cursor } of candidates) assert.match(cursor, /[+/]/);
    const cursor = codec.encode(WS, 5);
    candidates.push(
      { label: 'padding =', cursor: `${cursor}=` },
      { label: 'padding ==', cursor: `${cursor}==` },
      { label: 'padding ===', cursor: `${cursor}===` },
      { label: 'padding inside', cursor: `${cursor.slice(0, 10)}=${cursor.slice(10)}` },
      // A 50-byte prefix spelled with its padding, as standard base64 would.
      { label: 'padded truncation', cursor: Buffer.from(cursor, 'base64url').subarray(0, 50).toString('base64') },
    );
    assertAllRefused(candidates);
  });

  it('refuses non-canonical spellings of the same bytes', () => {
    const candidates = [];
    // 59 bytes take 79 characters, the last of which carries 2 unused bits: setting them spells
    // the same bytes otherwise, and each such spelling must be refused.
    const cursor = codec.encode(WS, 5);
    const lastIndex = ALPHABET.indexOf(cursor.at(-1)!);
    for (let extra = 1; extra < 4; extra++) {
      const variant = cursor.slice(0, -1) + ALPHABET[lastIndex | extra];
      if (variant === cursor) continue;
      assert.deepEqual(Buffer.from(variant, 'base64url'), Buffer.from(cursor, 'base64url'), 'same bytes');
      candidates.push({ label: `non-canonical last character ${extra}`, cursor: variant });
    }
    // A version-1 cursor (51 bytes, exactly 68 characters): one more character carries only ignored bits.
    const legacy = legacyToken(WS, 5n);
    for (const ch of ALPHABET) {
      const variant = legacy + ch;
      assert.deepEqual(Buffer.from(variant, 'base64url'), Buffer.from(legacy, 'base64url'), 'same bytes');
      candidates.push({ label: `legacy, trailing ${ch}`, cursor: variant });
    }
    assert.ok(candidates.length >= 64);
    assertAllRefused(candidates);
  });

  it('refuses a cursor of another workspace, saying so', () => {
    for (const seq of [0, 3, 1_000_000]) {
      const r = refusal(() => codec.decode(OTHER_WS, codec.encode(WS, seq)));
      assert.equal(r.ok, true, JSON.stringify(r));
      assert.match((r as { message: string }).message, /another workspace/);
      // and the other way round
      const back = refusal(() => codec.decode(WS, codec.encode(OTHER_WS, seq)));
      assert.equal(back.ok, true);
      assert.match((back as { message: string }).message, /another workspace/);
    }
  });

  it('refuses a cursor signed with another secret as altered', () => {
    const other = new CursorCodec(OTHER_SECRET);
    for (const seq of [0, 3, 1_000_000]) {
      const r = refusal(() => codec.decode(WS, other.encode(WS, seq)));
      assert.equal(r.ok, true, JSON.stringify(r));
      assert.match((r as { message: string }).message, /altered/);
      assert.doesNotMatch((r as { message: string }).message, /another workspace/);
    }
  });

  it('refuses positions a Number cannot hold, and an unsupported version even with a valid MAC', () => {
    const r = refusal(() => codec.decode(WS, codec.encode(WS, 2 ** 53)));
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(refusal(() => codec.decode(WS, legacyToken(WS, 2n ** 53n))).ok, true, 'version 1 too');

    assert.equal(documentedToken(WS, 5n), codec.encode(WS, 5), 'layout as documented');
    for (const version of [0, 3, 255]) {
      const other = refusal(() => codec.decode(WS, documentedToken(WS, 5n, { version })));
      assert.equal(other.ok, true, JSON.stringify(other));
      assert.match((other as { message: string }).message, /version/);
    }
  });
});

describe('the position in a cursor cannot be read', () => {
  const positionOf = (cursor: string) => Buffer.from(cursor, 'base64url').subarray(1, 17);

  it('consecutive positions share nothing visible but the workspace: no seq, no order, no common bytes', () => {
    const cursors = Array.from({ length: 300 }, (_, i) => codec.encode(WS, 1000 + i));
    for (const [i, cursor] of cursors.entries()) {
      const bytes = Buffer.from(cursor, 'base64url');
      const seq = Buffer.alloc(8);
      seq.writeBigUInt64BE(BigInt(1000 + i));
      assert.equal(bytes.indexOf(seq), -1, `the seq's bytes appear in the cursor of ${1000 + i}`);
      assert.equal(bytes.toString('latin1', 17, 43), WS.slice(3), 'the workspace, in clear');
      if (i > 0) {
        const [a, b] = [positionOf(cursors[i - 1]!), positionOf(cursor)];
        const same = a.reduce((n, byte, j) => n + (byte === b[j] ? 1 : 0), 0);
        assert.ok(same <= 6, `${same} of 16 position bytes in common between ${999 + i} and ${1000 + i}`);
        // The text before the workspace has nothing in common but the version's first character.
        assert.ok(cursor.slice(1, 22) !== cursors[i - 1]!.slice(1, 22));
      }
    }
    const sorted = [...cursors].sort();
    assert.notDeepEqual(sorted, cursors, 'cursors sort in the order of their positions');
    assert.notDeepEqual(sorted, [...cursors].reverse());
  });

  it('one seq looks unrelated in another workspace, under another secret, and in a page token', () => {
    const tokens = new PageTokenCodec(codec);
    const blocks = [
      positionOf(codec.encode(WS, 7)),
      positionOf(codec.encode(OTHER_WS, 7)),
      positionOf(new CursorCodec(OTHER_SECRET).encode(WS, 7)),
      positionOf(tokens.encode(WS, 7, '{}')),
    ].map((b) => b.toString('hex'));
    assert.equal(new Set(blocks).size, 4, blocks.join(' '));
  });

  it('cursors given to a restricted key over HTTP say nothing of the events it does not see', async () => {
    let server: TestServer | undefined;
    try {
      server = await startTestServer(await sqliteDatabase(), { EVENT_FEED_SECRET: SECRET });
      const ws = await server.workspace();
      const writer = (await server.key(ws, ['write'])).key;
      const restricted = (await server.key(ws, ['read'], ['mbx_mine'])).key;
      const seen: string[] = [];
      let after: string | undefined;
      // Its events at seq 1, 2, 6, 10: the others' traffic in between.
      for (const [i, mailbox] of [
        'mbx_mine',
        'mbx_mine',
        'mbx_x',
        'mbx_x',
        'mbx_x',
        'mbx_mine',
        'mbx_x',
        'mbx_x',
        'mbx_x',
        'mbx_mine',
      ].entries()) {
        assert.equal((await server.post('/v1/emit_event', sampleEvent(mailbox, i), writer)).status, 201);
        if (mailbox !== 'mbx_mine') continue;
        const page = await server.post('/v1/event_feed', after === undefined ? {} : { after }, restricted);
        assert.equal(page.json.events.length, 1);
        seen.push((after = page.json.next_cursor));
      }
      for (const [i, cursor] of seen.entries()) {
        const bytes = Buffer.from(cursor, 'base64url');
        assert.equal(bytes[0], 2, 'issued as version 2');
        const seq = Buffer.alloc(8);
        seq.writeBigUInt64BE(BigInt([1, 2, 6, 10][i]!));
        assert.equal(bytes.indexOf(seq), -1, `cursor ${i} shows seq ${[1, 2, 6, 10][i]}`);
      }

      // A client that stored a version-1 cursor before the upgrade: it resumes where it was, is
      // answered byte for byte what it sent while nothing is new, and gets version 2 from there.
      const full = (await server.key(ws, ['read'])).key;
      const stored = legacyToken(ws, 6n);
      const resumed = await server.post('/v1/event_feed', { after: stored }, full);
      assert.equal(resumed.status, 200, resumed.text);
      assert.deepEqual(
        resumed.json.events.map((e: any) => e.subject.refs.message_id),
        ['msg_6', 'msg_7', 'msg_8', 'msg_9'],
      );
      assert.equal(resumed.json.next_cursor, seen.at(-1), 'the same position as the restricted key was given');
      const caughtUp = await server.post('/v1/event_feed', { after: legacyToken(ws, 10n) }, full);
      assert.deepEqual(caughtUp.json, { events: [], next_cursor: legacyToken(ws, 10n) });
      const tampered = Buffer.from(stored, 'base64url');
      tampered[8] = tampered[8]! ^ 1;
      const refused = await server.post('/v1/event_feed', { after: tampered.toString('base64url') }, full);
      assert.equal(refused.status, 400);
      assert.match(refused.json.error.message, /altered/);
    } finally {
      await server?.stop();
      await server?.database.drop();
    }
  });
});

describe('tokens of version 1 (seq in clear) that clients still hold', () => {
  it('a version-1 cursor still reads, to the same position, and is answered with version-2 cursors from there', () => {
    for (const seq of [0, 1, 42, 2 ** 40 + 7, Number.MAX_SAFE_INTEGER]) {
      const legacy = legacyToken(WS, BigInt(seq));
      assert.equal(legacy.length, 68);
      assert.equal(new CursorCodec(SECRET).decode(WS, legacy), seq);
      assert.equal(codec.decode(WS, codec.encode(WS, seq)), seq);
    }
  });

  it('a version-1 cursor altered in any bit, of another workspace, or signed with another secret is refused', () => {
    const legacy = Buffer.from(legacyToken(WS, 123_456n), 'base64url');
    const candidates = [];
    for (let i = 0; i < legacy.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const copy = Buffer.from(legacy);
        copy[i] = copy[i]! ^ (1 << bit);
        candidates.push({ label: `legacy byte ${i} bit ${bit}`, cursor: copy.toString('base64url') });
      }
    }
    candidates.push({ label: 'other secret', cursor: legacyToken(WS, 5n, { secret: OTHER_SECRET }) });
    candidates.push({ label: 'page token domain', cursor: legacyToken(WS, 5n, { domain: PAGE_TOKEN_DOMAIN }) });
    assertAllRefused(candidates);
    const foreign = refusal(() => codec.decode(WS, legacyToken(OTHER_WS, 5n)));
    assert.equal(foreign.ok, true);
    assert.match((foreign as { message: string }).message, /another workspace/);
  });

  it('list_events page tokens: version 1 still reads, bound to its filters; version 2 hides its position; tampering is refused', () => {
    const tokens = new PageTokenCodec(codec);
    const filters = '{"types":null}';
    const digest = createHash('sha256').update(filters).digest().subarray(0, 16);
    const legacy = legacyToken(WS, 77n, { domain: PAGE_TOKEN_DOMAIN, extra: digest });
    assert.equal(tokens.decode(WS, legacy, filters), 77);
    assert.throws(() => tokens.decode(WS, legacy, '{"types":["mail.sent"]}'), /other filters/);

    const token = tokens.encode(WS, 77, filters);
    assert.equal(token, documentedToken(WS, 77n, { domain: PAGE_TOKEN_DOMAIN, extra: digest }), 'layout as documented');
    assert.equal(tokens.decode(WS, token, filters), 77);
    const seq = Buffer.alloc(8);
    seq.writeBigUInt64BE(77n);
    assert.equal(Buffer.from(token, 'base64url').indexOf(seq), -1);
    for (const bad of [legacy, token]) {
      const bytes = Buffer.from(bad, 'base64url');
      for (let i = 0; i < bytes.length; i++) {
        const copy = Buffer.from(bytes);
        copy[i] = copy[i]! ^ 0x10;
        assert.throws(
          () => tokens.decode(WS, copy.toString('base64url'), filters),
          (err: ApiError) => err.code === 'invalid_argument' && /page_token/.test(err.message),
        );
      }
    }
    assert.throws(() => codec.decode(WS, token), /not a valid cursor/, 'a page token is not a cursor');
  });
});
