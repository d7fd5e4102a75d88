import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { ApiError } from '../src/errors.ts';
import { CursorCodec } from '../src/feed/cursor.ts';

const SECRET = 'test-secret-0123456789abcdefghijklmnopqrstuvwxyz';
const OTHER_SECRET = 'other-secret-0123456789abcdefghijklmnopqrstuvwxyz';
const WS = 'ws_01M6DMBE00KKNS70D02MHHS0KA';
const OTHER_WS = 'ws_01M6DMBE00KKNS70D02MHHS0KB';
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

const codec = new CursorCodec(SECRET);

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
  const seqs = [0, 1, 2, 42, 255, 256, 65_535, 65_536, 2 ** 31 - 1, 2 ** 32, 2 ** 40 + 7, Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER];

  it('round-trips seq 0, small and large seqs', () => {
    for (const seq of seqs) {
      const cursor = codec.encode(WS, seq);
      assert.equal(codec.decode(WS, cursor), seq, `seq ${seq}`);
      assert.match(cursor, /^[A-Za-z0-9_-]+$/, 'base64url without padding');
      assert.equal(cursor.length, 68, 'fixed length');
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
      assert.equal(candidates.length, 68 * 63);
      assertAllRefused(candidates);
    }
  });

  it('refuses every single-bit flip and every single-byte change of the decoded bytes', () => {
    for (const seq of [0, 7, 123_456_789]) {
      const bytes = Buffer.from(codec.encode(WS, seq), 'base64url');
      assert.equal(bytes.length, 51);
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
      assert.ok(messages.every((m) => m.startsWith('after is not a valid cursor')), messages.find((m) => !m.startsWith('after is not a valid cursor')));
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
      '!'.repeat(68),
      'A'.repeat(68),
      'A'.repeat(67) + 'B',
      '_'.repeat(68),
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
    const cursor = codec.encode(WS, 5);
    const bytes = Buffer.from(cursor, 'base64url');
    const candidates = [];
    // 51 bytes are exactly 68 characters: one more character carries only ignored bits, so the
    // decoded bytes are the same; each such spelling must be refused.
    for (const ch of ALPHABET) {
      const variant = cursor + ch;
      assert.deepEqual(Buffer.from(variant, 'base64url'), bytes, 'same bytes');
      candidates.push({ label: `trailing ${ch}`, cursor: variant });
    }
    // A shorter cursor whose last character has non-zero unused bits decodes like the canonical one.
    const short = bytes.subarray(0, 50).toString('base64url'); // 67 chars, last one has 2 unused bits
    const lastIndex = ALPHABET.indexOf(short.at(-1)!);
    for (let extra = 1; extra < 4; extra++) {
      const variant = short.slice(0, -1) + ALPHABET[lastIndex | extra];
      if (variant === short) continue;
      assert.deepEqual(Buffer.from(variant, 'base64url'), Buffer.from(short, 'base64url'));
      candidates.push({ label: `short non-canonical ${extra}`, cursor: variant });
    }
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

    // Rebuild the documented layout with the secret to sign a body of another version.
    const sign = (body: Buffer) => createHmac('sha256', SECRET).update(body).digest().subarray(0, 16);
    const body = Buffer.alloc(35);
    body.writeUInt8(1, 0);
    body.writeBigUInt64BE(5n, 1);
    body.write(WS.slice(3), 9, 26, 'latin1');
    assert.equal(Buffer.concat([body, sign(body)]).toString('base64url'), codec.encode(WS, 5), 'layout as documented');
    body.writeUInt8(2, 0);
    const v2 = refusal(() => codec.decode(WS, Buffer.concat([body, sign(body)]).toString('base64url')));
    assert.equal(v2.ok, true, JSON.stringify(v2));
    assert.match((v2 as { message: string }).message, /version/);
  });
});
