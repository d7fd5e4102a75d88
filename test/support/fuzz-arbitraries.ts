/**
 * fast-check generators of hostile input for event-feed: raw JSON text (nasty and duplicated keys,
 * numbers JSON.parse bends), deep nesting, cursors derived from real ones, emit bodies mutated field
 * by field, header variants, unknown paths and methods.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const NASTY_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'after',
  'limit',
  'type',
  'subject',
  'data',
  'id',
  'occurred_at',
  'refs',
  '',
  ' ',
  'after\u0000',
  'AFTER',
  'limit ',
];

/** Number texts that JSON.parse turns into something else than they say. */
export const NUMBER_TEXTS = [
  '1e400',
  '-1e400',
  '-0',
  '0.0',
  '-0.0',
  '1e-400',
  '12345678901234567890',
  '-12345678901234567890',
  '9007199254740993',
  '1.0',
  '1e2',
  '5e-1',
  '100.000000000000000001',
  '0.1e1',
  '1E+2',
  '500',
  '501',
  '0',
  '-1',
  '1',
];

const keyArb = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...NASTY_KEYS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12, unit: 'binary' }) },
);

const scalarText = fc.oneof(
  fc.constantFrom(...NUMBER_TEXTS, 'true', 'false', 'null', '""', '"\\u0000"', '"\\ud800"', '"\\udfff\\ud800"'),
  fc.jsonValue({ maxDepth: 0 }).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 30, unit: 'binary' }).map((s) => JSON.stringify(s)),
);

/** JSON text built by hand, so objects can repeat keys and carry `__proto__` as an own key. */
export const jsonTextArb: fc.Arbitrary<string> = fc.letrec<{ value: string; array: string; object: string }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalarText, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 5 }).map((items) => `[${items.join(',')}]`),
  object: fc
    .array(fc.tuple(keyArb, tie('value')), { maxLength: 6 })
    .chain((entries) =>
      // Sometimes repeat one of the keys with another value.
      entries.length === 0
        ? fc.constant(entries)
        : fc
            .option(fc.tuple(fc.nat(entries.length - 1), tie('value')), { nil: undefined })
            .map((dup) => (dup ? [...entries, [entries[dup[0]]![0], dup[1]] as [string, string]] : entries)),
    )
    .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
})).value;

/** A top-level JSON object text, often with plausible parameters among the noise. */
export const jsonObjectTextArb: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      fc.tuple(keyArb, jsonTextArb),
      fc.tuple(fc.constantFrom('after', 'limit'), fc.oneof(fc.constantFrom(...NUMBER_TEXTS), jsonTextArb)),
    ),
    { maxLength: 5 },
  )
  .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);

/** Thousands of levels of `[`, `{"a":` or a mix, closed or not, bare or inside a parameter. */
export const deepNestingArb = fc
  .record({
    depth: fc.oneof(fc.integer({ min: 500, max: 5000 }), fc.integer({ min: 5000, max: 40_000 })),
    shape: fc.constantFrom('array', 'object', 'mixed'),
    closed: fc.boolean(),
    where: fc.constantFrom('bare', 'after', 'limit', 'data', 'subject', 'unknown'),
  })
  .map(({ depth, shape, closed, where }) => {
    const open = (i: number) => (shape === 'array' || (shape === 'mixed' && i % 2) ? '[' : '{"a":');
    const close = (i: number) => (shape === 'array' || (shape === 'mixed' && i % 2) ? ']' : '}');
    let opening = '';
    let closing = '';
    for (let i = 0; i < depth; i++) {
      opening += open(i);
      if (closed) closing = close(i) + closing;
    }
    const value = `${opening}1${closing}`;
    return { depth, shape, closed, where, text: where === 'bare' ? value : `{${JSON.stringify(where)}:${value}}` };
  });

// --- cursors -----------------------------------------------------------------------------------

export interface CursorCase {
  kind: string;
  value: string;
}

const base64urlChars = (min: number, max: number) =>
  fc.string({
    unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'),
    minLength: min,
    maxLength: max,
  });

/** Cursors from nothing and from real ones: flipped, re-encoded, foreign, truncated, extended, re-signed-looking. */
export function cursorArb(real: string[], foreign: string[]): fc.Arbitrary<CursorCase> {
  const realArb = fc.constantFrom(...real);
  const c = (kind: string, arb: fc.Arbitrary<string>) => arb.map((value) => ({ kind, value }));
  return fc.oneof(
    c('real', realArb),
    c('random string', fc.string({ maxLength: 120, unit: 'binary' })),
    c('random base64url', base64urlChars(1, 120)),
    c('random base64url of the right length', base64urlChars(68, 68)),
    c(
      'bit flipped',
      fc.tuple(realArb, fc.nat()).map(([cursor, bit]) => {
        const bytes = Buffer.from(cursor, 'base64url');
        const i = bit % (bytes.length * 8);
        bytes[i >> 3]! ^= 1 << (i & 7);
        return bytes.toString('base64url');
      }),
    ),
    c(
      'standard base64 with padding',
      realArb.map((cursor) => Buffer.from(cursor, 'base64url').toString('base64')),
    ),
    c(
      'padded',
      fc.tuple(realArb, fc.integer({ min: 1, max: 3 })).map(([cursor, n]) => cursor + '='.repeat(n)),
    ),
    c(
      'alphabet swapped',
      realArb.map((cursor) => cursor.replace(/-/g, '+').replace(/_/g, '/')),
    ),
    c(
      'whitespace',
      fc.tuple(realArb, fc.constantFrom(' ', '\n', '\t', '\u00a0')).map(([cursor, ws]) => `${ws}${cursor}${ws}`),
    ),
    c(
      'case flipped',
      fc.tuple(realArb, fc.nat()).map(([cursor, i]) => {
        const at = i % cursor.length;
        const ch = cursor[at]!;
        const flipped = ch === ch.toUpperCase() ? ch.toLowerCase() : ch.toUpperCase();
        return cursor.slice(0, at) + flipped + cursor.slice(at + 1);
      }),
    ),
    c('another workspace', fc.constantFrom(...foreign)),
    c(
      'truncated',
      fc.tuple(realArb, fc.nat()).map(([cursor, k]) => cursor.slice(0, k % cursor.length)),
    ),
    c(
      'truncated at the end',
      fc.tuple(realArb, fc.integer({ min: 1, max: 4 })).map(([cursor, k]) => cursor.slice(0, -k)),
    ),
    c(
      'extended',
      fc.tuple(realArb, base64urlChars(1, 8)).map(([cursor, more]) => cursor + more),
    ),
    c(
      're-signed-looking',
      fc.tuple(realArb, base64urlChars(22, 22)).map(([cursor, mac]) => cursor.slice(0, -22) + mac),
    ),
    c(
      'seq changed',
      fc.tuple(realArb, fc.bigInt({ min: 0n, max: (1n << 64n) - 1n })).map(([cursor, seq]) => {
        const bytes = Buffer.from(cursor, 'base64url');
        bytes.writeBigUInt64BE(seq, 1);
        return bytes.toString('base64url');
      }),
    ),
    c(
      'version changed',
      fc.tuple(realArb, fc.integer({ min: 0, max: 255 })).map(([cursor, v]) => {
        const bytes = Buffer.from(cursor, 'base64url');
        bytes[0] = v;
        return bytes.toString('base64url');
      }),
    ),
    c(
      'over 512 characters',
      fc.tuple(realArb, fc.integer({ min: 8, max: 40 })).map(([cursor, n]) => cursor.repeat(n)),
    ),
  );
}

// --- emit bodies -------------------------------------------------------------------------------

/** A valid emit request for each event type: the contract's own data examples. */
export function validEmitBases(): Array<{ type: string; subject: any; data: any }> {
  const dir = join(ROOT, 'schemas', 'data');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.schema.json'))
    .sort()
    .map((f) => {
      const schema = JSON.parse(readFileSync(join(dir, f), 'utf8'));
      const type = `mail.${f.replace(/^mail-/, '').replace(/\.schema\.json$/, '')}`;
      return {
        type,
        subject: {
          person: { email: 'claire.dubois@exemple.fr', name: 'Claire Dubois' },
          refs: { mailbox_id: 'mbx_sales', message_id: 'msg_7Hq2LmXv9RtK', thread_id: 'thr_Wc4nZp8sBd' },
        },
        data: schema.examples[0],
      };
    });
}

type Path = Array<string | number>;

function paths(value: unknown, prefix: Path = []): Path[] {
  const out: Path[] = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...prefix, i])));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]));
  return out;
}

function getAt(root: any, path: Path): any {
  return path.reduce((node, k) => node?.[k], root);
}

function setAt(root: any, path: Path, value: unknown): any {
  if (path.length === 0) return value;
  const parent = getAt(root, path.slice(0, -1));
  if (parent && typeof parent === 'object') defineOwn(parent, path.at(-1)!, value);
  return root;
}

/** Sets an own, enumerable property, `__proto__` included (as JSON.parse would). */
function defineOwn(target: any, key: string | number, value: unknown) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

const RAW = '\u0001RAW\u0001';

const otherTypeValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 20 }),
  fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
);

/** Dates: valid ones at the edges of offsets, and the broken and the unrepresentable. */
export const dateArb = fc.oneof(
  fc
    .record({
      year: fc.integer({ min: 1970, max: 9999 }),
      month: fc.integer({ min: 1, max: 12 }),
      day: fc.integer({ min: 1, max: 28 }),
      hour: fc.integer({ min: 0, max: 23 }),
      minute: fc.integer({ min: 0, max: 59 }),
      second: fc.integer({ min: 0, max: 59 }),
      fraction: fc.constantFrom('', '.5', '.123', '.123456', '.999999999'),
      offset: fc.constantFrom(
        'Z',
        'z',
        '+00:00',
        '-00:00',
        '+14:00',
        '-12:00',
        '+05:30',
        '-09:30',
        '+23:59',
        '+24:00',
        '+14:01',
        '+0100',
        '',
      ),
      sep: fc.constantFrom('T', 'T', 'T', 't', ' '),
    })
    .map(({ year, month, day, hour, minute, second, fraction, offset, sep }) => {
      const p = (n: number, w = 2) => String(n).padStart(w, '0');
      return `${p(year, 4)}-${p(month)}-${p(day)}${sep}${p(hour)}:${p(minute)}:${p(second)}${fraction}${offset}`;
    }),
  fc.constantFrom(
    '2026-13-45T10:00:00Z',
    '2026-02-30T10:00:00Z',
    '2026-02-29T10:00:00Z',
    '2028-02-29T10:00:00Z',
    '2026-11-21T24:00:00Z',
    '2026-11-21T23:60:00Z',
    '2016-12-31T23:59:60Z',
    '2026-12-31T23:59:60Z',
    '2026-06-30T23:59:60+00:00',
    '2026-07-01T01:59:60+02:00',
    '2026-11-21T12:00:61Z',
    '1969-12-31T23:59:59.999Z',
    '1970-01-01T00:00:00.000Z',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999Z',
    '9999-12-31T23:59:59.999-12:00',
    '9999-12-31T23:59:59.999+14:00',
    '0001-01-01T00:00:00+14:00',
    '2026-11-21T12:00:00',
    '2026-11-21',
    '2026-11-21T12:00Z',
    '+002026-11-21T12:00:00Z',
    '2026-11-21T12:00:00.Z',
    '2026-11-21T12:00:00,5Z',
    '2026-11-21T12:00:00.1234567890123456789012Z',
    '',
  ),
);

const LIMITED_STRINGS: Array<{ path: Path; max: number; make: (n: number) => string }> = [
  { path: ['subject', 'person', 'name'], max: 256, make: (n) => 'é'.repeat(n) },
  { path: ['subject', 'person', 'name'], max: 256, make: (n) => '😀'.repeat(n) },
  { path: ['subject', 'person', 'email'], max: 254, make: (n) => `${'a'.repeat(Math.max(1, n - 11))}@exemple.fr` },
  { path: ['subject', 'refs', 'message_id'], max: 68, make: (n) => `msg_${'x'.repeat(Math.max(0, n - 4))}` },
  { path: ['subject', 'refs', 'mailbox_id'], max: 68, make: (n) => `mbx_${'s'.repeat(Math.max(0, n - 4))}` },
  { path: ['data', 'subject_line'], max: 998, make: (n) => 'S'.repeat(n) },
  { path: ['data', 'internet_message_id'], max: 998, make: (n) => `<${'i'.repeat(Math.max(0, n - 2))}>` },
  { path: ['data', 'diagnostic'], max: 1000, make: (n) => 'd'.repeat(n) },
  { path: ['data', 'smtp_response'], max: 1000, make: (n) => `250${' '.repeat(Math.max(0, n - 3))}` },
  { path: ['data', 'recipient'], max: 254, make: (n) => `${'r'.repeat(Math.max(1, n - 11))}@exemple.fr` },
  { path: ['occurred_at'], max: 35, make: (n) => `2026-11-21T12:00:00.${'1'.repeat(Math.max(1, n - 20))}Z` },
];

type Mutation =
  | { kind: 'none' }
  | { kind: 'swap type'; at: number; value: unknown }
  | { kind: 'data of another type'; other: number }
  | { kind: 'delete'; at: number }
  | { kind: 'extra property'; at: number; key: string; value: unknown }
  | { kind: 'occurred_at'; value: string }
  | { kind: 'next_attempt_at'; value: string }
  | { kind: 'near maxLength'; field: number; delta: number }
  | { kind: 'special number'; at: number; text: string }
  | { kind: 'id'; value: string }
  | { kind: 'mailbox'; value: string | undefined };

export interface EmitCase {
  text: string;
  mutations: string[];
}

/** Valid emit bodies mutated one to three times; the text is exact (raw numbers, own `__proto__`). */
export function emitCaseArb(bases: ReturnType<typeof validEmitBases>, ids: string[]): fc.Arbitrary<EmitCase> {
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
    {
      weight: 3,
      arbitrary: fc.record({ kind: fc.constant('special number' as const), at: fc.nat(), text: fc.constantFrom(...NUMBER_TEXTS) }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('occurred_at' as const), value: dateArb }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('near maxLength' as const),
        field: fc.nat(LIMITED_STRINGS.length - 1),
        delta: fc.integer({ min: -2, max: 2 }),
      }),
    },
    fc.record({ kind: fc.constant('swap type' as const), at: fc.nat(), value: otherTypeValue }),
    fc.record({ kind: fc.constant('data of another type' as const), other: fc.nat(bases.length - 1) }),
    fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('extra property' as const), at: fc.nat(), key: keyArb, value: fc.jsonValue({ maxDepth: 2 }) }),
    fc.record({ kind: fc.constant('occurred_at' as const), value: dateArb }),
    fc.record({ kind: fc.constant('next_attempt_at' as const), value: dateArb }),
    fc.record({
      kind: fc.constant('near maxLength' as const),
      field: fc.nat(LIMITED_STRINGS.length - 1),
      delta: fc.integer({ min: -2, max: 2 }),
    }),
    fc.record({ kind: fc.constant('special number' as const), at: fc.nat(), text: fc.constantFrom(...NUMBER_TEXTS) }),
    fc.record({
      kind: fc.constant('id' as const),
      value: fc.oneof(
        fc.constantFrom(...ids),
        fc.constantFrom(
          'evt_',
          'evt_01m7yp4pbrwywjnssp15rrxj6y',
          'evt_01M7YP4PBRWYWJNSSP15RRXJ6I',
          `evt_${'Z'.repeat(26)}`,
          'EVT_01M7YP4PBRWYWJNSSP15RRXJ6Y',
          '',
        ),
      ),
    }),
    fc.record({ kind: fc.constant('mailbox' as const), value: fc.constantFrom('mbx_sales', 'mbx_other', 'mbx_', 'mbx_a b', undefined) }),
  );
  return fc
    .tuple(
      fc.nat(bases.length - 1),
      fc.oneof(
        { weight: 3, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 1 }) },
        { weight: 2, arbitrary: fc.array(mutation, { minLength: 2, maxLength: 3 }) },
      ),
    )
    .map(([b, mutations]) => {
      let event: any = structuredClone(bases[b]!);
      const raw: string[] = [];
      const applied: string[] = [];
      for (const m of mutations) {
        const all = paths(event).filter((p) => p.length > 0);
        switch (m.kind) {
          case 'none':
            break;
          case 'swap type': {
            const p = all[m.at % all.length]!;
            event = setAt(event, p, m.value);
            applied.push(`swap ${p.join('.')} → ${JSON.stringify(m.value)?.slice(0, 40)}`);
            break;
          }
          case 'data of another type':
            event.data = structuredClone(bases[m.other]!.data);
            applied.push(`data of ${bases[m.other]!.type}`);
            break;
          case 'delete': {
            const p = all[m.at % all.length]!;
            const parent = getAt(event, p.slice(0, -1));
            if (Array.isArray(parent)) parent.splice(Number(p.at(-1)), 1);
            else if (parent && typeof parent === 'object') delete parent[p.at(-1)!];
            applied.push(`delete ${p.join('.')}`);
            break;
          }
          case 'extra property': {
            const objects = paths(event).filter((p) => {
              const v = getAt(event, p);
              return v && typeof v === 'object' && !Array.isArray(v);
            });
            const p = objects[m.at % objects.length]!;
            defineOwn(getAt(event, p), m.key, m.value);
            applied.push(`extra ${[...p, m.key].join('.')}`);
            break;
          }
          case 'occurred_at':
            event.occurred_at = m.value;
            applied.push(`occurred_at ${m.value}`);
            break;
          case 'next_attempt_at':
            if (event.data && typeof event.data === 'object') event.data.next_attempt_at = m.value;
            applied.push(`data.next_attempt_at ${m.value}`);
            break;
          case 'near maxLength': {
            const field = LIMITED_STRINGS[m.field]!;
            const parent = getAt(event, field.path.slice(0, -1));
            if (parent && typeof parent === 'object') parent[field.path.at(-1)!] = field.make(field.max + m.delta);
            applied.push(`${field.path.join('.')} of ${field.max + m.delta} (max ${field.max})`);
            break;
          }
          case 'special number': {
            const numeric = all.filter((p) => typeof getAt(event, p) === 'number');
            const p = numeric.length ? numeric[m.at % numeric.length]! : ['data', 'size_bytes'];
            event = setAt(event, p, `${RAW}${raw.length}`);
            raw.push(m.text);
            applied.push(`${p.join('.')} = ${m.text}`);
            break;
          }
          case 'id':
            event.id = m.value;
            applied.push(`id ${m.value}`);
            break;
          case 'mailbox':
            if (event.subject?.refs && typeof event.subject.refs === 'object') {
              if (m.value === undefined) delete event.subject.refs.mailbox_id;
              else event.subject.refs.mailbox_id = m.value;
            }
            applied.push(`mailbox ${m.value}`);
            break;
        }
      }
      let text = JSON.stringify(event) ?? 'null';
      raw.forEach((numberText, i) => {
        text = text.replace(JSON.stringify(`${RAW}${i}`), numberText);
      });
      return { text, mutations: applied.length ? applied : ['none'] };
    });
}

// --- headers, paths, methods ---------------------------------------------------------------------

export const CONTENT_TYPES_JSON = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'APPLICATION/JSON',
  'application/merge-patch+json',
  'application/vnd.api+json',
];
export const CONTENT_TYPES_NOT_JSON = [
  undefined,
  'text/plain',
  'application/json; charset=latin1',
  'application/json; charset=iso-8859-1',
  'application/json; charset=utf-16',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'text/json',
  'application/jsonp',
  '',
  'json',
  ';;;',
  'application/',
  '*/*',
];

export const contentTypeArb = fc.oneof(
  fc.constantFrom(...CONTENT_TYPES_JSON).map((value) => ({ value: value as string | undefined, json: true as boolean | undefined })),
  fc.constantFrom(...CONTENT_TYPES_NOT_JSON).map((value) => ({ value, json: false as boolean | undefined })),
  // Garbage: printable latin1 (what a header may carry); the verdict is unknown, only its shape is checked.
  fc
    .string({
      unit: fc
        .integer({ min: 0x20, max: 0xff })
        .filter((c) => c !== 0x7f)
        .map((c) => String.fromCharCode(c)),
      maxLength: 60,
    })
    .map((value) => ({ value, json: undefined })),
);

/** Authorization header variants around a real key; `valid` when it is exactly `Bearer <key>`. */
export function authorizationArb(realKey: string): fc.Arbitrary<{ value: string | undefined; kind: string; valid: boolean | undefined }> {
  const latin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
  return fc.oneof(
    fc.constant({ value: `Bearer ${realKey}`, kind: 'exact', valid: true }),
    fc.constantFrom(
      { value: undefined, kind: 'missing', valid: false },
      { value: '', kind: 'empty', valid: false },
      { value: 'Bearer', kind: 'Bearer without token', valid: false },
      { value: 'Bearer ', kind: 'Bearer and a space', valid: false },
      { value: `Basic ${Buffer.from(`user:${realKey}`).toString('base64')}`, kind: 'Basic', valid: false },
      { value: `Token ${realKey}`, kind: 'Token', valid: false },
      { value: realKey, kind: 'no scheme', valid: false },
      { value: `Bearer ${realKey.slice(0, -1)}`, kind: 'truncated key', valid: false },
      { value: `Bearer ${realKey}x`, kind: 'extended key', valid: false },
      { value: `Bearer ${realKey.slice(0, -1)}${realKey.at(-1) === 'A' ? 'B' : 'A'}`, kind: 'wrong secret', valid: false },
      { value: `Bearer ${realKey.toLowerCase()}`, kind: 'lowercased key', valid: false },
      { value: `Bearer "${realKey}"`, kind: 'quoted key', valid: false },
      { value: `Bearer ${realKey} ${realKey}`, kind: 'key twice', valid: false },
      { value: `Bearer  ${realKey}`, kind: 'two spaces', valid: undefined },
      { value: `bearer ${realKey}`, kind: 'lowercase bearer', valid: undefined },
      { value: `BEARER ${realKey}`, kind: 'uppercase bearer', valid: undefined },
      { value: `Bearer ${realKey} `, kind: 'trailing space', valid: undefined },
      { value: `Bearer\t${realKey}`, kind: 'tab', valid: false },
      { value: `Bearer ${latin1('efk_é')}`, kind: 'non-ASCII token', valid: false },
      { value: `Bearer ${latin1(`${realKey}é`)}`, kind: 'non-ASCII suffix', valid: false },
      { value: latin1(`Bearer ${realKey.replace('efk_', 'efk_\u00e9')}`), kind: 'non-ASCII inside', valid: false },
    ),
    fc.integer({ min: 200, max: 8000 }).map((n) => ({ value: `Bearer ${'A'.repeat(n)}`, kind: `long token (${n})`, valid: false })),
    fc
      .integer({ min: 200, max: 8000 })
      .map((n) => ({ value: `Bearer ${realKey}${'A'.repeat(n)}`, kind: `real key + ${n} chars`, valid: false })),
    fc
      .string({
        unit: fc
          .integer({ min: 0x21, max: 0xff })
          .filter((c) => c !== 0x7f)
          .map((c) => String.fromCharCode(c)),
        maxLength: 80,
      })
      .map((t) => ({ value: `Bearer ${t}`, kind: 'random token', valid: false })),
  );
}

/** Methods Node's HTTP parser knows (an unknown one is refused by Node itself before the app). */
export const METHODS = [
  'GET',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'HEAD',
  'PROPFIND',
  'MKCOL',
  'COPY',
  'MOVE',
  'LOCK',
  'UNLOCK',
  'SEARCH',
  'PURGE',
  'REPORT',
  'MERGE',
  'NOTIFY',
  'SUBSCRIBE',
  'LINK',
  'QUERY',
];

const segment = fc.string({
  unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~%2'),
  minLength: 1,
  maxLength: 16,
});

export const pathArb = fc.oneof(
  fc.constantFrom(
    '/v1/event_feed',
    '/v1/emit_event',
    '/v1/event_feed/',
    '/v1/EVENT_FEED',
    '/v1/event_feed/extra',
    '/v1//event_feed',
    '/v1/event_feed?after=x&limit=1',
    '/v1/event_feed%00',
    '/v1/%2e%2e/mcp',
    '/v1/%ff',
    '/v1/%',
    '/v1/event_feed;x=1',
    '/v1',
    '/v1/',
    '/v2/event_feed',
    '/V1/event_feed',
    '/mcp/',
    '/mcp/x',
    '/healthz/x',
    '/openapi.json/x',
    '/%2fv1%2fevent_feed',
    '//v1/event_feed',
  ),
  segment.map((s) => `/v1/${s}`),
  fc.tuple(segment, segment).map(([a, b]) => `/${a}/${b}`),
  segment.map((s) => `/${s}`),
);
