/**
 * Hostile input, property-based (fast-check), against one in-process server on SQLite: random and
 * malformed JSON, duplicated keys, deep nesting, oversized bodies, invalid UTF-8, numbers JSON.parse
 * bends, header variants, cursors derived from real ones, emit bodies mutated field by field, MCP
 * tools/call and malformed JSON-RPC, unknown paths and methods.
 *
 * Properties: never a 5xx (nor a JSON-RPC internal error, nor a tool error `internal`); the status
 * is one the contract allows; every /v1 error has the contract's shape and the status's code; where
 * the verdict is decidable from the contract (the same JSON.parse and schema), it is that verdict;
 * and the server still serves a normal read afterwards. A failure prints fast-check's seed and
 * path; FC_SEED=<seed> replays a run.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { sqliteDatabase, type TestDatabase } from './support/databases.ts';
import {
  CONTENT_TYPES_JSON,
  METHODS,
  authorizationArb,
  contentTypeArb,
  cursorArb,
  deepNestingArb,
  emitCaseArb,
  jsonObjectTextArb,
  jsonTextArb,
  NUMBER_TEXTS,
  pathArb,
  validEmitBases,
} from './support/fuzz-arbitraries.ts';
import { checkMcp, checkV1, checkV1Success, sendRaw, type RawResponse } from './support/fuzz-http.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const FEED = '/v1/event_feed';
const EMIT = '/v1/emit_event';
const MAX_BODY = 64 * 1024;
const MIN_TOTAL_CASES = 10_000;
const SEED = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
const params = (numRuns: number): fc.Parameters<unknown> => ({
  numRuns,
  includeErrorInReport: true,
  ...(SEED === undefined ? {} : { seed: SEED }),
});

// The emit-mutation properties write to a workspace of their own (keys `emit*`), so what they get
// stored cannot change what the reading properties see.
type KeyName =
  | 'none'
  | 'garbage'
  | 'revoked'
  | 'read'
  | 'rw'
  | 'restricted'
  | 'noread'
  | 'foreign'
  | 'emitRw'
  | 'emitRestricted'
  | 'emitRead'
  | 'emitNoread';
const PERMISSIONS: Partial<Record<KeyName, string[]>> = {
  read: ['read'],
  rw: ['read', 'write'],
  restricted: ['read', 'write'],
  noread: ['write'],
  foreign: ['read'],
  emitRw: ['read', 'write'],
  emitRestricted: ['read', 'write'],
  emitRead: ['read'],
  emitNoread: ['write'],
};
const RESTRICTED_KEYS = new Set<KeyName>(['restricted', 'emitRestricted']);
const RESTRICTED_TO = ['mbx_sales'];
const keyNameArb = fc.constantFrom<KeyName>('none', 'garbage', 'revoked', 'read', 'rw', 'rw', 'restricted', 'noread', 'foreign');

const cases: Record<string, number> = {};
let failedProperties = 0;
/** fc.assert, remembering failures: a property that stops at its first counterexample runs fewer cases. */
async function check<Ts>(property: fc.IAsyncProperty<Ts>, parameters: fc.Parameters<Ts>) {
  try {
    await fc.assert(property, parameters);
  } catch (err) {
    failedProperties++;
    throw err;
  }
}
const count = (group: string) => void (cases[group] = (cases[group] ?? 0) + 1);

let database: TestDatabase;
let server: TestServer;
const keys = {} as Record<KeyName, string | undefined>;
/** The real cursors each key may use: those of its workspace. */
let realCursors: string[] = [];
let foreignCursors: string[] = [];
const emitIds = ['evt_01M7YP4PBRWYWJNSSP15RRXJ6Y', 'evt_01M7YP7PAG3YR9FGTGP73H5R7W', 'evt_01M7Z283CTH2XDMXWGDHGTD7PE'];

const send = (
  path: string,
  body: string | Buffer | undefined,
  keyName: KeyName,
  extra: { method?: string; headers?: Record<string, string | undefined>; chunked?: boolean } = {},
) =>
  sendRaw(server.url, {
    method: extra.method ?? 'POST',
    path,
    body,
    chunked: extra.chunked,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(keys[keyName] ? { authorization: `Bearer ${keys[keyName]}` } : {}),
      ...(path.startsWith('/mcp') ? { accept: 'application/json, text/event-stream' } : {}),
      ...extra.headers,
    },
  });

const isPlainObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The statuses the contract decides for a /v1 call with a JSON body text (Content-Type JSON), or
 * undefined when it does not decide. Mirrors the documented order: key, permission, body, contract,
 * scope, cursor.
 */
function expectedV1(path: string, keyName: KeyName, text: string): number[] | undefined {
  const permissions = PERMISSIONS[keyName];
  if (!permissions) return [401];
  if (path === FEED && !permissions.includes('read')) return [403];
  if (path === EMIT && !permissions.includes('write')) return [403];
  if (Buffer.byteLength(text) > MAX_BODY) return [413];
  let body: unknown;
  try {
    body = text === '' ? {} : JSON.parse(text);
  } catch {
    return [400];
  }
  if (!isPlainObject(body)) return [400];
  if (path === FEED) {
    if (contractErrors('EventFeedRequest', body) !== null) return [400];
    if (!permissions.includes('read')) return [403];
    if (body.after === undefined) return [200];
    return (keyName === 'foreign' ? foreignCursors : keyName.startsWith('emit') ? [] : realCursors).includes(body.after) ? [200] : [400];
  }
  if (path === EMIT) {
    if (contractErrors('EmitEventRequest', body) !== null) return [400];
    if (!permissions.includes('write')) return [403];
    if (RESTRICTED_KEYS.has(keyName) && !RESTRICTED_TO.includes(body.subject.refs.mailbox_id)) return [403];
    // Accepted by the contract: created, an idempotent replay (200), or refused for a date no UTC
    // timestamp can hold (a leap second, before 1970) or an id reused with other content.
    return body.id === undefined ? [201, 400] : [201, 200, 400];
  }
  return undefined;
}

/** The checks of every /v1 answer, plus the contract's verdict when it decides one. */
function checkV1Verdict(res: RawResponse, path: string, keyName: KeyName, text: string | undefined, label: string) {
  checkV1(res, label);
  const expected = text === undefined ? undefined : expectedV1(path, keyName, text);
  const where = `${label} → ${res.status} ${res.text.slice(0, 300)}`;
  if (expected) assert.ok(expected.includes(res.status), `expected ${expected.join('/')}: ${where}`);
  if (path === EMIT && text !== undefined && res.status < 300) {
    const sent = JSON.parse(text);
    const event = res.json.event;
    assert.equal(event.type, sent.type, where);
    assert.equal(jsonDifference(sent.subject, event.subject, 'subject'), undefined, `subject stored as sent: ${where}`);
    assert.equal(jsonDifference(sent.data, event.data, 'data'), undefined, `data stored as sent: ${where}`);
    if (sent.id !== undefined) assert.equal(event.id, sent.id, where);
    if (sent.occurred_at !== undefined && res.status === 201)
      assert.equal(event.occurred_at, new Date(sent.occurred_at).toISOString(), `occurred_at normalised to UTC: ${where}`);
  }
  if (res.status < 300) checkV1Success(res, path, label);
  if (path === EMIT && expected?.includes(201) && res.status === 400) {
    assert.match(
      res.json.error.message,
      /occurred_at|already used/,
      `a contract-valid emit is refused only for its date or a reused id: ${where}`,
    );
  }
}

/** Where a stored JSON value differs from the one sent (numbers compared as numbers: -0 is 0). */
function jsonDifference(sent: unknown, stored: unknown, path: string): string | undefined {
  if (typeof sent === 'number')
    return typeof stored === 'number' && sent === stored ? undefined : `${path}: sent ${sent}, stored ${JSON.stringify(stored)}`;
  if (Array.isArray(sent)) {
    if (!Array.isArray(stored) || stored.length !== sent.length)
      return `${path}: sent an array of ${sent.length}, stored ${JSON.stringify(stored)?.slice(0, 80)}`;
    for (let i = 0; i < sent.length; i++) {
      const d = jsonDifference(sent[i], stored[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (isPlainObject(sent)) {
    if (!isPlainObject(stored)) return `${path}: sent an object, stored ${JSON.stringify(stored)?.slice(0, 80)}`;
    const keys = Object.keys(sent);
    if (JSON.stringify(keys) !== JSON.stringify(Object.keys(stored))) return `${path}: keys ${keys} stored as ${Object.keys(stored)}`;
    for (const k of keys) {
      const d = jsonDifference(sent[k], stored[k], `${path}.${k}`);
      if (d) return d;
    }
    return undefined;
  }
  return sent === stored ? undefined : `${path}: sent ${JSON.stringify(sent)}, stored ${JSON.stringify(stored)}`;
}

/** Deterministic cases first: every integer field of every type given 1e400, -0 and a 20-digit integer. */
function numberExamples(bases: ReturnType<typeof validEmitBases>): Array<[{ text: string; mutations: string[] }, KeyName]> {
  const out: Array<[{ text: string; mutations: string[] }, KeyName]> = [];
  for (const base of bases) {
    for (const [field, value] of Object.entries(base.data)) {
      if (typeof value !== 'number') continue;
      for (const numberText of ['1e400', '-0', '12345678901234567890']) {
        const marker = '"__NUMBER__"';
        const text = JSON.stringify({ ...base, data: { ...base.data, [field]: '__NUMBER__' } }).replace(marker, numberText);
        out.push([{ text, mutations: [`data.${field} = ${numberText}`] }, 'emitRw']);
      }
    }
  }
  return out;
}

const mcpCall = (name: string, argumentsText: string, id: number | string = 1) =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${argumentsText}}}`;

/** A tools/call answer: the MCP checks, and the verdict the same body gets over HTTP. */
function checkToolVerdict(res: RawResponse, keyName: KeyName, argumentsText: string, label: string) {
  checkMcp(res, label);
  const where = `${label} → ${res.status} ${res.text.slice(0, 300)}`;
  if (!PERMISSIONS[keyName]) return assert.equal(res.status, 401, where);
  assert.equal(res.status, 200, where);
  let args: unknown;
  try {
    args = JSON.parse(argumentsText);
  } catch {
    return;
  }
  if (!isPlainObject(args)) return;
  const expected = expectedV1(FEED, keyName, argumentsText);
  if (!expected || Buffer.byteLength(res.text) === 0) return;
  const result = res.json.result;
  assert.ok(result, `a tool result: ${where}`);
  if (expected.includes(200)) assert.ok(!result.isError, `the arguments are valid: ${where}`);
  else assert.equal(result._meta?.['event-feed/error']?.code, expected[0] === 403 ? 'forbidden' : 'invalid_argument', where);
}

describe('hostile input (fast-check, SQLite, one server)', () => {
  before(async () => {
    database = await sqliteDatabase();
    server = await startTestServer(database, { RATE_LIMIT_PER_SECOND: '0' });
    const ws = await server.workspace({ verified: true });
    const ws2 = await server.workspace();
    keys.none = undefined;
    keys.garbage = `efk_${'0'.repeat(26)}_${'A'.repeat(43)}`;
    keys.read = (await server.key(ws, ['read'])).key;
    keys.rw = (await server.key(ws, ['read', 'write'])).key;
    keys.restricted = (await server.key(ws, ['read', 'write'], RESTRICTED_TO)).key;
    keys.noread = (await server.key(ws, ['write'])).key;
    keys.foreign = (await server.key(ws2, ['read'])).key;
    const revoked = await server.key(ws, ['read', 'write']);
    await server.revokeKey(revoked.id);
    keys.revoked = revoked.key;
    const foreignWriter = (await server.key(ws2, ['read', 'write'])).key;
    const ws3 = await server.workspace();
    keys.emitRw = (await server.key(ws3, ['read', 'write'])).key;
    keys.emitRestricted = (await server.key(ws3, ['read', 'write'], RESTRICTED_TO)).key;
    keys.emitRead = (await server.key(ws3, ['read'])).key;
    keys.emitNoread = (await server.key(ws3, ['write'])).key;

    for (const [i, mailbox] of ['mbx_sales', 'mbx_other', undefined, 'mbx_sales', 'mbx_other', 'mbx_sales'].entries()) {
      assert.equal((await server.post(EMIT, sampleEvent(mailbox, i), keys.rw)).status, 201);
    }
    for (let i = 0; i < 2; i++) assert.equal((await server.post(EMIT, sampleEvent('mbx_sales', 100 + i), foreignWriter)).status, 201);
    const collect = async (key: string) => {
      const cursors = new Set<string>();
      let after: string | undefined;
      for (let i = 0; i < 20; i++) {
        const page = await server.post(FEED, after === undefined ? { limit: 1 } : { after, limit: 1 }, key);
        assert.equal(page.status, 200);
        cursors.add(page.json.next_cursor);
        if (page.json.events.length === 0) break;
        after = page.json.next_cursor;
      }
      return [...cursors];
    };
    realCursors = [...new Set([...(await collect(keys.rw)), ...(await collect(keys.restricted))])];
    foreignCursors = await collect(keys.foreign);
    assert.ok(realCursors.length >= 5 && foreignCursors.length >= 2);
  });
  after(async () => {
    await server?.stop();
    await database?.drop();
  });

  it('HTTP: random JSON bodies (nasty and duplicated keys, bent numbers) on both operations', async () => {
    await check(
      fc.asyncProperty(
        fc.constantFrom(FEED, EMIT),
        keyNameArb,
        fc.oneof(
          jsonTextArb,
          jsonObjectTextArb,
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        async (path, keyName, text) => {
          count('http random json');
          checkV1Verdict(await send(path, text, keyName), path, keyName, text, `${path} key=${keyName} body=${text.slice(0, 200)}`);
        },
      ),
      params(2300),
    );
  });

  it('HTTP: duplicated keys are read as JSON.parse reads them (the last one wins)', async () => {
    const entry = fc.oneof(
      fc.tuple(
        fc.constant('after'),
        fc.oneof(fc.constantFrom(...realCursors), fc.constant('nope')).map((c) => JSON.stringify(c)),
      ),
      fc.tuple(fc.constant('limit'), fc.constantFrom(...NUMBER_TEXTS, '"5"', 'null')),
      fc.tuple(fc.constantFrom('__proto__', 'constructor', 'prototype'), fc.constantFrom('{}', '{"limit":1}', 'null', '1')),
    );
    await check(
      fc.asyncProperty(
        fc.array(entry, { minLength: 1, maxLength: 4 }),
        fc.nat(),
        fc.constantFrom<KeyName>('read', 'rw', 'restricted'),
        fc.boolean(),
        async (entries, dup, keyName, onEmit) => {
          count('http duplicated keys');
          const repeated = entries[dup % entries.length]!;
          const all = [...entries, [repeated[0], entries.at(-1)![1]] as const, repeated];
          let text = `{${all.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
          const path = onEmit ? EMIT : FEED;
          if (onEmit) {
            // A valid event with a repeated top-level key in front (the later, valid value wins).
            const event = JSON.stringify(sampleEvent('mbx_sales', dup));
            text = `{"type":123,"data":"x","subject":null,${event.slice(1)}`;
          }
          checkV1Verdict(await send(path, text, keyName), path, keyName, text, `${path} key=${keyName} body=${text.slice(0, 300)}`);
        },
      ),
      params(500),
    );
  });

  it('HTTP and MCP: thousands of levels of nesting', async () => {
    await check(
      fc.asyncProperty(deepNestingArb, fc.constantFrom(FEED, EMIT, '/mcp', '/mcp args'), async (nesting, target) => {
        count('deep nesting');
        const label = `${target} depth=${nesting.depth} ${nesting.shape} closed=${nesting.closed} in ${nesting.where} (${nesting.text.length} bytes)`;
        if (target === '/mcp') return checkMcp(await send('/mcp', nesting.text, 'read'), label);
        if (target === '/mcp args') return checkMcp(await send('/mcp', mcpCall('event_feed', nesting.text), 'read'), label);
        const res = await send(target, nesting.text, 'rw');
        checkV1Verdict(res, target, 'rw', nesting.text, label);
        if (nesting.text.length > MAX_BODY) assert.equal(res.status, 413, label);
      }),
      params(150),
    );
  });

  it('HTTP and MCP: bodies just over 64 KiB and of a few MB, with Content-Length or chunked', async () => {
    await check(
      fc.asyncProperty(
        fc.oneof(
          fc.constantFrom(MAX_BODY - 1, MAX_BODY, MAX_BODY + 1),
          fc.integer({ min: MAX_BODY + 1, max: MAX_BODY + 2048 }),
          fc.integer({ min: 1 << 20, max: 4 << 20 }),
        ),
        fc.constantFrom(FEED, EMIT, '/mcp'),
        fc.constantFrom<KeyName>('rw', 'rw', 'none'),
        fc.boolean(),
        async (size, path, keyName, chunked) => {
          count('oversized');
          const head =
            path === '/mcp'
              ? '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"event_feed","arguments":{"after":"'
              : '{"after":"';
          const tail = path === '/mcp' ? '"}}}' : '"}';
          const body = Buffer.from(head + 'A'.repeat(Math.max(0, size - head.length - tail.length)) + tail);
          const label = `${path} ${body.length} bytes key=${keyName} chunked=${chunked}`;
          const res = await send(path, body, keyName, { chunked });
          if (path === '/mcp') checkMcp(res, label);
          else checkV1(res, label);
          if (keyName === 'none') assert.equal(res.status, 401, label);
          else if (body.length > MAX_BODY) assert.equal(res.status, 413, label);
          else assert.notEqual(res.status, 413, label);
        },
      ),
      params(50),
    );
  });

  it('HTTP and MCP: invalid UTF-8 byte sequences', async () => {
    const badBytes = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 24 }),
      fc
        .constantFrom(
          [0xff],
          [0xfe, 0xff],
          [0xc0, 0xaf],
          [0xc0, 0x80],
          [0xed, 0xa0, 0x80],
          [0xed, 0xbf, 0xbf],
          [0xf4, 0x90, 0x80, 0x80],
          [0xe2, 0x82],
          [0x80],
          [0xf8, 0x88, 0x80, 0x80, 0x80],
          [0x22],
          [0x5c],
          [0x00],
        )
        .map((b) => Uint8Array.from(b)),
    );
    const templates: Array<[string, string, string]> = [
      [FEED, '{"after":"', '"}'],
      [FEED, '{"', '":1}'],
      [EMIT, JSON.stringify(sampleEvent('mbx_sales', 1)).replace(/"subject_line":"[^"]*"/, '"subject_line":"'), ''],
      [EMIT, '', ''],
      ['/mcp', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"event_feed","arguments":{"after":"', '"}}}'],
      ['/mcp', '', ''],
    ];
    await check(
      fc.asyncProperty(fc.nat(templates.length - 1), badBytes, fc.constantFrom<KeyName>('rw', 'read'), async (t, bytes, keyName) => {
        count('invalid utf-8');
        let [path, prefix, suffix] = templates[t]!;
        if (path === EMIT && prefix !== '') {
          // Close the subject_line string right after the bad bytes, keep the rest of the event.
          const rest = JSON.stringify(sampleEvent('mbx_sales', 1)).split(/"subject_line":"[^"]*"/)[1]!;
          suffix = `"${rest}`;
        }
        const body = Buffer.concat([Buffer.from(prefix), bytes, Buffer.from(suffix)]);
        const label = `${path} key=${keyName} bytes=${Buffer.from(bytes).toString('hex')} template=${t}`;
        const res = await send(path, body, keyName);
        if (path === '/mcp') return checkMcp(res, label);
        // The server reads the body as UTF-8 with replacement characters, as Buffer#toString does.
        const decoded = body.toString('utf8');
        checkV1Verdict(res, path, keyName, prefix === '' ? undefined : decoded, label);
      }),
      params(500),
    );
  });

  it('HTTP and MCP: Content-Type and Authorization variants', async () => {
    const bodies: Record<string, string> = {
      [FEED]: '{"limit":2}',
      [EMIT]: JSON.stringify(sampleEvent('mbx_sales', 7)),
      '/mcp': mcpCall('event_feed', '{"limit":2}'),
    };
    await check(
      fc.asyncProperty(
        fc.constantFrom(FEED, EMIT, '/mcp'),
        fc
          .constantFrom<KeyName>('read', 'rw', 'restricted')
          .chain((keyName) => fc.tuple(fc.constant(keyName), authorizationArb(keys[keyName]!))),
        contentTypeArb,
        fc.boolean(),
        async (path, [keyName, auths], contentType, withBody) => {
          count('headers');
          const body = withBody || path === '/mcp' ? bodies[path]! : undefined;
          const headers: Record<string, string | undefined> = { authorization: auths.value, 'content-type': contentType.value };
          const label = `${path} key=${keyName} auth=${auths.kind} content-type=${JSON.stringify(contentType.value)} body=${body !== undefined}`;
          const res = await send(path, body, keyName, { headers });
          if (path === '/mcp') {
            checkMcp(res, label);
            if (auths.valid === false && auths.kind !== 'key twice') assert.equal(res.status, 401, label);
            // The SDK wants the literal (lowercase) `application/json` in Content-Type; other JSON types get 415.
            if (auths.valid === true && contentType.json === true && contentType.value!.includes('application/json'))
              assert.equal(res.status, 200, label);
            return;
          }
          checkV1(res, label);
          if (auths.valid === false) assert.equal(res.status, 401, label);
          if (auths.valid !== true) return;
          if (body === undefined || contentType.json === true) {
            const expected = expectedV1(path, keyName, body ?? '')!;
            assert.ok(expected.includes(res.status), `expected ${expected.join('/')}: ${label} → ${res.status} ${res.text.slice(0, 200)}`);
          } else if (contentType.json === false) {
            // …unless the key lacks the operation's permission, which is refused before the body is read.
            const status = expectedV1(path, keyName, '')?.[0] === 403 ? 403 : 400;
            assert.equal(res.status, status, `a body that is not declared UTF-8 JSON is refused: ${label} → ${res.text.slice(0, 200)}`);
          }
        },
      ),
      params(1200),
    );
  });

  it('HTTP and MCP: cursors — random, bit-flipped, re-encoded, foreign, truncated, extended, re-signed-looking', async () => {
    await check(
      fc.asyncProperty(
        cursorArb(realCursors, foreignCursors),
        fc.option(fc.integer({ min: 1, max: 500 }), { nil: undefined }),
        fc.constantFrom<KeyName>('read', 'rw', 'restricted', 'foreign', 'noread'),
        fc.integer({ min: 0, max: 4 }),
        async (cursor, limit, keyName, transport) => {
          count('cursors');
          const args = JSON.stringify(limit === undefined ? { after: cursor.value } : { after: cursor.value, limit });
          const label = `${cursor.kind} ${JSON.stringify(cursor.value).slice(0, 140)} key=${keyName}`;
          if (transport === 0)
            return checkToolVerdict(await send('/mcp', mcpCall('event_feed', args), keyName), keyName, args, `MCP ${label}`);
          const res = await send(FEED, args, keyName);
          checkV1Verdict(res, FEED, keyName, args, label);
          const own = keyName === 'foreign' ? foreignCursors : realCursors;
          if (keyName !== 'noread' && !own.includes(cursor.value)) {
            assert.equal(res.status, 400, `a cursor not issued to this workspace is refused: ${label}`);
          }
        },
      ),
      params(2100),
    );
  });

  it('HTTP: emit_event bodies mutated field by field (types, data, dates, lengths, extra properties, numbers, ids)', async () => {
    const bases = validEmitBases();
    for (const base of bases) assert.equal(contractErrors('EmitEventRequest', base), null, `valid base ${base.type}`);
    await check(
      fc.asyncProperty(
        emitCaseArb(bases, emitIds),
        fc.constantFrom<KeyName>('emitRw', 'emitRw', 'emitRw', 'emitRestricted', 'emitNoread', 'emitRead'),
        async (emit, keyName) => {
          count('emit mutations');
          const label = `emit key=${keyName} [${emit.mutations.join('; ')}] body=${emit.text.slice(0, 300)}`;
          checkV1Verdict(await send(EMIT, emit.text, keyName), EMIT, keyName, emit.text, label);
        },
      ),
      params(2200),
    );
  });

  it('HTTP: numbers JSON.parse bends (1e400, -0, 20 digits) in every numeric data field of every type', async () => {
    const failures: string[] = [];
    for (const [emit] of numberExamples(validEmitBases())) {
      count('emit numbers');
      const label = `emit [${emit.mutations.join('; ')}]`;
      try {
        checkV1Verdict(await send(EMIT, emit.text, 'emitRw'), EMIT, 'emitRw', emit.text, label);
      } catch (err) {
        failures.push(`${label}: ${(err as Error).message.split('\n')[0]!.slice(0, 160)}`);
      }
    }
    assert.deepEqual(failures, [], 'a number is refused (400) or stored as sent, and the stored event is contract-valid');
  });

  it('MCP: tools/call with random arguments and tool names', async () => {
    await check(
      fc.asyncProperty(
        fc.oneof(
          { weight: 4, arbitrary: fc.constant('event_feed') },
          { weight: 1, arbitrary: fc.constantFrom('emit_event', 'unknown', '', '__proto__', 'event_feed ', 'EVENT_FEED') },
        ),
        fc.oneof(
          jsonObjectTextArb,
          jsonTextArb,
          cursorArb(realCursors, foreignCursors).map((c) => JSON.stringify({ after: c.value })),
        ),
        fc.constantFrom<KeyName>('read', 'rw', 'restricted', 'noread', 'none', 'revoked'),
        async (tool, argumentsText, keyName) => {
          count('mcp tools/call');
          const res = await send('/mcp', mcpCall(tool, argumentsText, 7), keyName);
          const label = `tools/call ${tool} key=${keyName} arguments=${argumentsText.slice(0, 200)}`;
          if (tool === 'event_feed') return checkToolVerdict(res, keyName, argumentsText, label);
          checkMcp(res, label);
          if (res.status === 200)
            assert.ok(res.json.error || res.json.result?.isError, `unknown tool is an error: ${label} → ${res.text.slice(0, 200)}`);
        },
      ),
      params(1200),
    );
  });

  it('MCP: malformed JSON-RPC, batches, notifications, methods and Accept/Content-Type variants', async () => {
    const idArb = fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constantFrom(null, 1.5, {}, [], true));
    const message = fc
      .record(
        {
          jsonrpc: fc.constantFrom('2.0', '2.0', '1.0', 2, null),
          id: idArb,
          method: fc.constantFrom(
            'tools/call',
            'tools/list',
            'initialize',
            'ping',
            'notifications/initialized',
            'notifications/cancelled',
            'resources/list',
            'prompts/get',
            'logging/setLevel',
            'completion/complete',
            '',
            'rpc.discover',
            '__proto__',
            123 as unknown as string,
          ),
          params: fc.oneof(
            fc.constant(undefined),
            fc.jsonValue({ maxDepth: 2 }),
            fc.record(
              { name: fc.constantFrom('event_feed', 'x', 1 as unknown as string), arguments: fc.jsonValue({ maxDepth: 2 }) },
              { requiredKeys: [] },
            ),
            fc.constant({ protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } }),
          ),
          result: fc.jsonValue({ maxDepth: 1 }),
          error: fc.jsonValue({ maxDepth: 1 }),
        },
        { requiredKeys: ['jsonrpc'] },
      )
      .map((m) => JSON.stringify(m));
    const bodyArb = fc.oneof(
      message,
      fc.array(message, { maxLength: 4 }).map((ms) => `[${ms.join(',')}]`),
      jsonTextArb,
      fc.string({ maxLength: 60 }),
      fc.constantFrom(
        '',
        '{',
        '[',
        '{"jsonrpc":"2.0"',
        'null',
        '[]',
        '[[]]',
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"event_feed","arguments":{"limit":1}},"jsonrpc":"1.0"}',
      ),
    );
    await check(
      fc.asyncProperty(
        bodyArb,
        fc.constantFrom<KeyName>('read', 'read', 'none', 'garbage'),
        fc.constantFrom(
          'application/json, text/event-stream',
          'application/json, text/event-stream',
          'application/json',
          'text/event-stream',
          '*/*',
          undefined,
          'garbage',
        ),
        fc.constantFrom(...CONTENT_TYPES_JSON, 'text/plain', undefined),
        fc.constantFrom('POST', 'POST', 'POST', 'GET', 'DELETE', 'PUT', 'OPTIONS'),
        fc.constantFrom(undefined, '2025-06-18', '2025-03-26', '2025-11-25', '2026-07-28', '1999-01-01', 'garbage'),
        async (body, keyName, accept, contentType, method, protocolVersion) => {
          count('mcp malformed');
          const label = `${method} /mcp key=${keyName} accept=${accept} content-type=${contentType} protocol=${protocolVersion} body=${body.slice(0, 200)}`;
          const res = await send('/mcp', method === 'GET' ? undefined : body, keyName, {
            method,
            headers: { accept, 'content-type': contentType, 'mcp-protocol-version': protocolVersion },
          });
          if (method === 'OPTIONS' && res.status === 200) return; // CORS-style preflight answers are not JSON-RPC
          checkMcp(res, label);
          if (method !== 'POST') assert.equal(res.status, 405, label);
          else if (!keys[keyName] || keyName === 'garbage') assert.equal(res.status, 401, label);
        },
      ),
      params(1200),
    );
  });

  it('HTTP: unknown paths and methods', async () => {
    const methods = METHODS.filter((m) => http.METHODS.includes(m));
    await check(
      fc.asyncProperty(
        fc.constantFrom(...methods),
        pathArb,
        fc.constantFrom<KeyName>('none', 'read', 'rw'),
        fc.boolean(),
        async (method, path, keyName, withBody) => {
          count('paths and methods');
          const body = withBody && method !== 'HEAD' ? '{}' : undefined;
          const label = `${method} ${path} key=${keyName} body=${body !== undefined}`;
          const res = await send(path, body, keyName, { method });
          if (/^\/mcp\/?(\?|$)/i.test(path))
            return method === 'HEAD' ? assert.ok([401, 405].includes(res.status), `${label} → ${res.status}`) : checkMcp(res, label);
          if (/^\/v1(\/|\?|$)/i.test(path)) {
            if (method === 'HEAD') return assert.ok([401, 404, 405].includes(res.status), `${label} → ${res.status}`);
            checkV1(res, label);
            if (keyName === 'none') assert.equal(res.status, 401, label);
            return;
          }
          assert.ok([200, 400, 401, 403, 404, 405, 413, 415].includes(res.status), `${label} → ${res.status} ${res.text.slice(0, 200)}`);
        },
      ),
      params(600),
    );
  });

  it('MCP: invalid tools/call params are a tool error or -32602 Invalid params, never -32603 Internal error', async () => {
    // Over HTTP the same bodies are 400 invalid_argument ("request body must be a JSON object").
    for (const argumentsText of ['[]', '1', '"x"', 'true', '1e400', '[{"limit":1}]']) {
      count('mcp invalid params');
      const res = await send('/mcp', mcpCall('event_feed', argumentsText), 'read');
      const where = `arguments ${argumentsText} → ${res.status} ${res.text.slice(0, 300)}`;
      assert.equal(res.status, 200, where);
      const { result, error } = res.json;
      if (error) assert.equal(error.code, -32602, `JSON-RPC Invalid params, not ${error.code}: ${where}`);
      else assert.equal(result?._meta?.['event-feed/error']?.code, 'invalid_argument', where);
    }
  });

  it('every event the emit properties got accepted is served back contract-valid', async () => {
    const invalid: string[] = [];
    let after: string | undefined;
    let events = 0;
    for (let pages = 0; pages < 1000; pages++) {
      const res = await sendRaw(server.url, {
        path: FEED,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.emitRead}` },
        body: JSON.stringify(after === undefined ? { limit: 500 } : { after, limit: 500 }),
      });
      assert.equal(res.status, 200, res.text.slice(0, 300));
      for (const event of res.json.events) {
        events++;
        const errors = contractErrors('EventEnvelope', event);
        if (errors) invalid.push(`${event.id} ${event.type}: ${JSON.stringify(errors[0]).slice(0, 200)}`);
      }
      if (res.json.events.length === 0) break;
      after = res.json.next_cursor;
    }
    assert.ok(events > 0, 'the emit properties stored events');
    assert.deepEqual(
      invalid.slice(0, 10),
      [],
      `${invalid.length} of ${events} stored events violate EventEnvelope (one bad write spoils every page that holds it, over HTTP and MCP)`,
    );
  });

  it(`ran at least ${MIN_TOTAL_CASES} cases, and the server still serves a normal read`, async (t) => {
    const total = Object.values(cases).reduce((a, b) => a + b, 0);
    t.diagnostic(`cases: ${JSON.stringify(cases)}; total ${total}`);
    // A failed property stops at its counterexample (and is reported); the count is owed by a clean run.
    if (failedProperties === 0) assert.ok(total >= MIN_TOTAL_CASES, `only ${total} cases ran`);
    const page = await server.post(FEED, { limit: 3 }, keys.read);
    assert.equal(page.status, 200, page.text);
    assert.equal(contractErrors('EventFeedResponse', page.json), null);
    assert.equal(page.json.events.length, 3);
    const health = await fetch(`${server.url}/healthz`);
    assert.equal(health.status, 200);
  });
});
