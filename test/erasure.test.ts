/**
 * erase_person, erasure_status, list_erasures: a person erased from one workspace's events, on
 * both databases. The feed (HTTP and MCP) and list_events show the redaction, with the same ids,
 * order and cursors; events without the address are byte for byte as stored; another workspace is
 * untouched; redeliveries carry the erased events; the log keeps keyed hashes only, and the
 * address never reaches the service's logs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { PERSONAL_REDACTION } from '../generated/personal-fields.ts';
import { contractErrors } from './support/contract.ts';
import { databaseKinds, type TestDatabase } from './support/databases.ts';
import { mcpClient } from './support/mcp.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver, waitFor } from './support/webhook-receiver.ts';

const CLAIRE = 'claire.dubois@exemple.fr';
const INSECURE = { WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '40', WEBHOOK_TIMEOUT_MS: '1000', ERASURE_BATCH_SEQS: '7' };

/** Four shapes of event, two carrying Claire (one in an upper-case spelling), one only as a recipient among others, one without her. */
function events(n: number) {
  const refs = { mailbox_id: 'mbx_contact', message_id: `msg_${n}`, thread_id: `thr_${n}` };
  return [
    {
      type: 'mail.received',
      subject: { person: { email: CLAIRE, name: 'Claire Dubois' }, refs },
      data: {
        from: { email: CLAIRE, name: 'Claire Dubois' },
        to: [{ email: 'contact@boutique-lumiere.fr', name: 'Boutique Lumière' }],
        cc: [{ email: 'julien.moreau@exemple.fr', name: 'Julien Moreau' }],
        subject_line: `Ma commande n° ${n}`,
        size_bytes: 4000 + n,
        attachment_count: 0,
        spam_score: 0.1,
        spam_verdict: 'pass',
      },
    },
    {
      type: 'mail.bounced',
      subject: { person: { email: 'Claire.Dubois@Exemple.FR' }, refs },
      data: {
        internet_message_id: `<b${n}@mail.boutique-lumiere.fr>`,
        recipient: 'Claire.Dubois@Exemple.FR',
        bounce_type: 'hard',
        bounce_category: 'unknown_user',
        smtp_code: 550,
        diagnostic: `550 5.1.1 <${CLAIRE}>: user unknown`,
      },
    },
    {
      type: 'mail.sent',
      subject: { person: { email: 'paul.martin@exemple.fr', name: 'Paul Martin' }, refs },
      data: {
        internet_message_id: `<s${n}@mail.boutique-lumiere.fr>`,
        from: { email: 'contact@boutique-lumiere.fr', name: 'Boutique Lumière' },
        to: [
          { email: 'paul.martin@exemple.fr', name: 'Paul Martin' },
          { email: CLAIRE, name: 'Claire Dubois' },
        ],
        bcc_count: 0,
        subject_line: `Votre devis ${n}`,
        size_bytes: 9000,
        attachment_count: 1,
      },
    },
    {
      type: 'mail.received',
      subject: { person: { email: 'paul.martin@exemple.fr', name: 'Paul Martin' }, refs },
      data: {
        from: { email: 'paul.martin@exemple.fr', name: 'Paul Martin' },
        to: [{ email: 'contact@boutique-lumiere.fr' }],
        subject_line: `Bonjour ${n}`,
        size_bytes: 1000,
        attachment_count: 0,
        spam_score: 0,
        spam_verdict: 'pass',
      },
    },
  ];
}

const ROUNDS = 6;

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`erase_person on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let database: TestDatabase;
    let server: TestServer;
    // Another instance on the same database, whose caches hold pages read before the erasure.
    let second: TestServer;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    const logged: string[] = [];
    let ws: string;
    let other: string;
    let admin: { id: string; key: string };
    let reader: string;
    let otherAdmin: string;
    let before_: Map<number, string>;
    let otherBefore: Map<number, string>;
    const cursors: Array<{ cursor: string; ids: string[] }> = [];

    const rows = async (workspaceId: string) =>
      new Map(
        (
          (await server.db('events').where({ workspace_id: workspaceId }).orderBy('seq').select('seq', 'envelope')) as Array<{
            seq: number | string;
            envelope: string;
          }>
        ).map((r) => [Number(r.seq), r.envelope]),
      );
    const feed = async (key: string, after?: string, limit = 500) => {
      const response = await server.post('/v1/event_feed', after ? { after, limit } : { limit }, key);
      assert.equal(response.status, 200, response.text);
      return response.json as { events: any[]; next_cursor: string };
    };
    const erase = (body: unknown, key = admin.key) => server.post('/v1/erase_person', body, key);
    const completed = async (id: string) => {
      for (let i = 0; i < 400; i++) {
        const status = await server.post('/v1/erasure_status', { id }, admin.key);
        assert.equal(status.status, 200, status.text);
        assert.equal(contractErrors('ErasureStatusResponse', status.json), null);
        if (status.json.erasure.status === 'completed') return status.json.erasure;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('the erasure did not complete');
    };

    before(async () => {
      database = await create();
      server = await startTestServer(database, INSECURE, {
        log: pino({ level: 'trace' }, { write: (line: string) => void logged.push(line) }),
      });
      receiver = await startReceiver();
      ws = await server.workspace();
      other = await server.workspace();
      admin = await server.key(ws, ['read', 'write', 'admin']);
      reader = (await server.key(ws, ['read'])).key;
      otherAdmin = (await server.key(other, ['read', 'write', 'admin'])).key;
      // An endpoint, disabled: nothing is delivered until the erasure is done and it is redelivered.
      const hook = await server.post('/v1/set_webhook', { url: receiver.url, enabled: false }, admin.key);
      assert.equal(hook.status, 200, hook.text);
      for (let n = 0; n < ROUNDS; n++) {
        for (const event of events(n)) {
          assert.equal((await server.post('/v1/emit_event', event, admin.key)).status, 201);
          assert.equal((await server.post('/v1/emit_event', event, otherAdmin)).status, 201);
        }
      }
      // Pages read before, some kept in the caches: cursors taken now must still work after.
      let cursor: string | undefined;
      for (;;) {
        const page = await feed(reader, cursor, 5);
        if (page.events.length === 0) break;
        cursors.push({ cursor: page.next_cursor, ids: [] });
        cursor = page.next_cursor;
      }
      second = await startTestServer(database, INSECURE);
      for (let after: string | undefined, i = 0; i < 30; i++) {
        const page = (await second.post('/v1/event_feed', after ? { after, limit: 5 } : { limit: 5 }, reader)).json;
        if (page.events.length === 0) break;
        after = page.next_cursor;
      }
      before_ = await rows(ws);
      otherBefore = await rows(other);
    });
    after(async () => {
      await receiver?.close();
      await second?.stop();
      await server?.stop();
      await database?.drop();
    });

    it('refuses a read key, a bad address, too many addresses, another workspace', async () => {
      assert.equal((await erase({ emails: [CLAIRE] }, reader)).json.error.code, 'forbidden');
      assert.equal((await erase({ emails: ['not an address'] })).json.error.code, 'invalid_argument');
      assert.equal((await erase({ emails: [] })).json.error.code, 'invalid_argument');
      const many = Array.from({ length: 101 }, (_, i) => `p${i}@exemple.fr`);
      assert.equal((await erase({ emails: many })).json.error.code, 'invalid_argument');
      assert.equal((await erase({ emails: [CLAIRE], workspace: other })).json.error.code, 'forbidden');
      assert.equal(
        (await server.post('/v1/erasure_status', { id: 'ers_01M7YP4PBRWYWJNSSP15RRXJ6Y' }, admin.key)).json.error.code,
        'invalid_argument',
      );
    });

    it('erases the address from every event that carries it, and nothing else', async () => {
      const started = await erase({ emails: [CLAIRE.toUpperCase()] });
      assert.equal(started.status, 200, started.text);
      assert.equal(contractErrors('ErasePersonResponse', started.json), null);
      assert.equal(started.json.outcome, 'started');
      const done = await completed(started.json.erasure.id);
      assert.equal(done.events_erased, ROUNDS * 3);
      assert.equal(done.events_scanned, ROUNDS * 4);
      assert.equal(done.requested_by, admin.id);

      const after_ = await rows(ws);
      assert.deepEqual([...after_.keys()], [...before_.keys()], 'the same seqs');
      for (const [seq, text] of after_) {
        const was = JSON.parse(before_.get(seq)!);
        const now = JSON.parse(text);
        assert.equal(contractErrors('EventEnvelope', now), null, text);
        assert.equal(now.id, was.id);
        assert.equal(now.type, was.type);
        assert.equal(now.occurred_at, was.occurred_at);
        assert.deepEqual(now.subject.refs, was.subject.refs);
        if (!before_.get(seq)!.toLowerCase().includes(CLAIRE)) {
          assert.equal(text, before_.get(seq), 'an event without the address is byte for byte as stored');
          continue;
        }
        assert.ok(!text.toLowerCase().includes('claire'), text);
        assert.ok(text.includes(PERSONAL_REDACTION.email));
      }
      const sent = JSON.parse([...after_.values()].find((t) => JSON.parse(t).type === 'mail.sent')!);
      assert.deepEqual(sent.data.to, [
        { email: 'paul.martin@exemple.fr', name: 'Paul Martin' },
        { email: PERSONAL_REDACTION.email, name: PERSONAL_REDACTION.name },
      ]);
      assert.equal(sent.subject.person.email, 'paul.martin@exemple.fr', "another person's address stays");
      const received = JSON.parse([...after_.values()].find((t) => JSON.parse(t).data.cc)!);
      assert.deepEqual(received.data.cc, [{ email: 'julien.moreau@exemple.fr', name: 'Julien Moreau' }]);
      assert.equal(received.data.subject_line, PERSONAL_REDACTION.text);

      assert.deepEqual(await rows(other), otherBefore, 'another workspace is untouched');
    });

    it('serves the erased events on the feed (HTTP and MCP), from cursors taken before too, and on list_events', async () => {
      const whole = await feed(reader);
      assert.equal(whole.events.length, ROUNDS * 4);
      assert.ok(!JSON.stringify(whole).toLowerCase().includes('claire'));
      const stored = [...(await rows(ws)).values()];
      assert.deepEqual(
        whole.events.map((e) => JSON.stringify(e)),
        stored.map((t) => JSON.stringify(JSON.parse(t))),
      );
      for (const { cursor } of cursors) {
        const page = await feed(reader, cursor, 5);
        assert.ok(!JSON.stringify(page).toLowerCase().includes('claire'));
        const at = whole.events.findIndex((e) => e.id === page.events[0]?.id);
        if (page.events.length)
          assert.deepEqual(
            page.events.map((e) => e.id),
            whole.events.slice(at, at + page.events.length).map((e) => e.id),
          );
      }
      const listed = await server.post('/v1/list_events', { limit: 500 }, reader);
      assert.equal(listed.json.events.length, ROUNDS * 4);
      assert.ok(!listed.text.toLowerCase().includes('claire'));

      const client = await mcpClient(server.url, reader);
      try {
        const result = await client.callTool({ name: 'event_feed', arguments: { limit: 500 } });
        assert.ok(!JSON.stringify(result).toLowerCase().includes('claire'));
        assert.deepEqual(
          (result.structuredContent as any).events.map((e: any) => e.id),
          whole.events.map((e) => e.id),
        );
      } finally {
        await client.close();
      }
      const otherFeed = await feed(otherAdmin);
      assert.ok(JSON.stringify(otherFeed).includes(CLAIRE), 'the other workspace still has her');
    });

    it("reaches another instance's caches", async () => {
      await waitFor(
        async () => {
          let text = '';
          for (let after: string | undefined, i = 0; i < 30; i++) {
            const page = await second.post('/v1/event_feed', after ? { after, limit: 5 } : { limit: 5 }, reader);
            if (page.json.events.length === 0) break;
            text += page.text;
            after = page.json.next_cursor;
          }
          return !text.toLowerCase().includes('claire');
        },
        10_000,
        'the other instance to serve the erased events',
      );
    });

    it('redelivers the erased events', async () => {
      assert.equal((await server.post('/v1/set_webhook', { url: receiver.url, enabled: true }, admin.key)).status, 200);
      const redelivered = await server.post('/v1/redeliver_webhook', { url: receiver.url }, admin.key);
      assert.equal(redelivered.status, 200, redelivered.text);
      await waitFor(() => receiver.received.length >= ROUNDS * 4, 20_000, 'every redelivery');
      for (const { body } of receiver.received) assert.ok(!body.toLowerCase().includes('claire'), body);
    });

    it('answers the same erasure for the same request, and logs only keyed hashes', async () => {
      const again = await erase({ emails: [CLAIRE] });
      assert.equal(again.json.outcome, 'existing');
      const log = await server.post('/v1/list_erasures', {}, admin.key);
      assert.equal(contractErrors('ListErasuresResponse', log.json), null);
      assert.equal(log.json.erasures.length, 1);
      assert.equal(log.json.erasures[0].id, again.json.erasure.id);
      assert.match(log.json.erasures[0].address_hashes[0], /^[0-9a-f]{64}$/);
      assert.equal((await server.post('/v1/list_erasures', {}, otherAdmin)).json.erasures.length, 0);
      const row = await server.db('erasures').first();
      assert.equal(row.sealed_addresses, null, 'the sealed addresses go once completed');
      assert.ok(!JSON.stringify(row).toLowerCase().includes('claire'));
      // A new event with her address after the erasure: asking again erases it too (a new erasure, from where the last stopped).
      await server.post('/v1/emit_event', events(99)[0], admin.key);
      const third = await erase({ emails: [CLAIRE] });
      assert.equal(third.json.outcome, 'started');
      const done = await completed(third.json.erasure.id);
      assert.equal(done.events_to_scan, 1);
      assert.equal(done.events_erased, 1);
    });

    it('makes one erasure of the same request sent twice at once', async () => {
      const [a, b] = await Promise.all([erase({ emails: ['personne@exemple.fr'] }), erase({ emails: ['Personne@Exemple.fr'] })]);
      assert.equal(a.json.erasure.id, b.json.erasure.id);
      assert.deepEqual([a.json.outcome, b.json.outcome].sort(), ['existing', 'started']);
      await completed(a.json.erasure.id);
    });

    it('never logs the address', () => {
      assert.ok(logged.length > 0);
      assert.ok(!logged.join('\n').toLowerCase().includes('claire'), 'the address reached the logs');
    });
  });
}
