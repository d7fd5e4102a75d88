/**
 * tsx bench/list-events-cost.ts --db sqlite|postgres [--events 300000] [--calls 40] [--dir DIR] [--only TEXT] [--skip A|B]
 *
 * The time one list_events call takes, per filter combination, on a workspace of `--events`
 * realistic events (benchTraffic: 50 mailboxes, two of them sparse, 1 event in 1,000), and on a
 * second workspace as large where mail.complained is 1 event in 30,000 and mail.bounced absent,
 * called in-process (no HTTP) so that the figure is the query and the page's assembly. For each
 * combination: the first page (median of 5), and a walk of up to `--calls` pages from the middle
 * of the feed (from a page_token at the middle), with the events each call returned. The database
 * is seeded once and kept (SQLite: DIR/feed-N.sqlite; Postgres: database list_events_cost_N), so
 * that the same data can be measured before and after a change. Not part of `npm run bench`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import knexFactory from 'knex';
import { permit, type Principal } from '../src/auth/principal.ts';
import { PageTokenCodec } from '../src/feed/page-token.ts';
import type { ListEventsRequest } from '../generated/types.ts';
import { runOperation } from '../src/operations/registry.ts';
import { createServices } from '../src/app/services.ts';
import { publish } from '../src/library.ts';
import { benchTraffic, MAILBOXES, seed, SPARSE_MAILBOXES } from './seed.ts';
import { openStore } from '../src/store/open-store.ts';
import type { Store } from '../src/store/port.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    events: { type: 'string', default: '300000' },
    calls: { type: 'string', default: '40' },
    dir: { type: 'string', default: '/tmp/list-events-cost' },
    only: { type: 'string' },
    skip: { type: 'string' },
  },
});
const events = Number(values.events);
const DAY = 24 * 3_600_000;
const calls = Number(values.calls);
mkdirSync(values.dir!, { recursive: true });
const infoFile = join(values.dir!, `seeded-${values.db}-${events}.json`);

let url: string;
if (values.db === 'sqlite') {
  url = `sqlite:${join(values.dir!, `feed-${events}.sqlite`)}`;
} else {
  const name = `list_events_cost_${events}`;
  const admin = knexFactory({ client: 'pg', connection: 'postgres://root@127.0.0.1:5432/postgres' });
  const exists = await admin.raw('SELECT 1 FROM pg_database WHERE datname = ?', [name]);
  if (exists.rows.length === 0) await admin.raw(`CREATE DATABASE ${name}`);
  await admin.destroy();
  url = `postgres://root@127.0.0.1:5432/${name}`;
}
const db = openStore(url);
await db.migrate();

interface Info {
  workspaceId: string;
  lastSeq: number;
  /** A second workspace of as many events, where mail.complained is very rare and mail.bounced absent. */
  rareWorkspaceId?: string;
  rareLastSeq?: number;
}
let info: Info;
if (existsSync(infoFile)) {
  info = JSON.parse(readFileSync(infoFile, 'utf8')) as Info;
} else {
  console.log(`seeding ${events} events…`);
  const seeded = await seed(db, { events, ingestWorkspaces: 0, readKeysPerWorkspace: 0, log: console.log });
  info = { workspaceId: seeded.workspaceId, lastSeq: seeded.lastSeq };
  writeFileSync(infoFile, JSON.stringify(info));
}
if (info.rareWorkspaceId === undefined) {
  console.log(`seeding the rare-types workspace (${events} events)…`);
  const ws = await db.createWorkspace('rare types', true, Date.now());
  const baseMs = Date.now() - 40 * DAY;
  let done = 0;
  let complained = 0;
  for (let k = 0; done < events; k++) {
    const batch = benchTraffic(10_000, 5_000_000 + k, baseMs)
      .filter((e) => {
        if (e.type === 'mail.bounced' || e.type === 'mail.rejected') return false;
        if (e.type === 'mail.complained') return complained++ % 200 === 0;
        return true;
      })
      .slice(0, events - done);
    await db.knex.transaction((trx) => publish(trx, ws.id, batch));
    done += batch.length;
  }
  info.rareWorkspaceId = ws.id;
  info.rareLastSeq = done;
  writeFileSync(infoFile, JSON.stringify(info));
}
const services = await createServices(db, {
  cursorSecret: 'x'.repeat(64),
  rateLimitPerSecond: 0,
  rateLimitBurst: 0,
  webhooksAllowInsecure: true,
} as never);

const principal = (workspaceId: string, mailboxes: string[] | null): Principal =>
  ({ keyId: 'bench', workspaceId, permissions: new Set(['read']), mailboxes }) as unknown as Principal;

const { min, max } = (
  (await db.knex('events').min({ min: 'occurred_at_ms' }).max({ max: 'occurred_at_ms' }).where('workspace_id', info.workspaceId)) as Array<{
    min: number;
    max: number;
  }>
)[0]!;
const iso = (ms: number) => new Date(ms).toISOString();
const unknown = (n: number) => Array.from({ length: n }, (_, i) => `mbx_unknown${i}`);
// The fourth member: true for the rare-types workspace.
const cases: Array<[string, Record<string, unknown>, string[] | null, boolean?]> = [
  ['no filter', {}, null],
  ['types: common (mail.delivered)', { types: ['mail.delivered'] }, null],
  ['types: rare (mail.complained)', { types: ['mail.complained'] }, null],
  ['types: two rare', { types: ['mail.complained', 'mail.rejected'] }, null],
  ['rare ws: types: 1 in 30,000 (mail.complained)', { types: ['mail.complained'] }, null, true],
  ['rare ws: types: absent (mail.bounced)', { types: ['mail.bounced'] }, null, true],
  ['rare ws: absent type + 1 mailbox', { types: ['mail.bounced'], mailbox_ids: [MAILBOXES[0]] }, null, true],
  ['rare ws: absent type + 40 mailboxes', { types: ['mail.bounced'], mailbox_ids: MAILBOXES.slice(10, 50) }, null, true],
  ['mailboxes: 1 busy', { mailbox_ids: [MAILBOXES[0]] }, null],
  ['mailboxes: 2 sparse', { mailbox_ids: SPARSE_MAILBOXES }, null],
  ['mailboxes: 40 (33 busy…)', { mailbox_ids: MAILBOXES.slice(10, 50) }, null],
  ['mailboxes: 100 (2 sparse + 98 unknown)', { mailbox_ids: [...SPARSE_MAILBOXES, ...unknown(98)] }, null],
  ['types+mailboxes: rare type, busy mailbox', { types: ['mail.complained'], mailbox_ids: [MAILBOXES[0]] }, null],
  ['types+mailboxes: rare type, sparse mailboxes', { types: ['mail.complained'], mailbox_ids: SPARSE_MAILBOXES }, null],
  ['types+mailboxes: common type, 3 mailboxes', { types: ['mail.delivered'], mailbox_ids: MAILBOXES.slice(0, 3) }, null],
  ['time: last day', { occurred_after: iso(max - DAY) }, null],
  ['time: one hour in the middle', { occurred_after: iso((min + max) / 2), occurred_before: iso((min + max) / 2 + 3_600_000) }, null],
  ['time: a week in the middle', { occurred_after: iso((min + max) / 2), occurred_before: iso((min + max) / 2 + 7 * DAY) }, null],
  ['time: before the first event', { occurred_before: iso(min) }, null],
  [
    'time: 1h window + rare type',
    { occurred_after: iso((min + max) / 2), occurred_before: iso((min + max) / 2 + 3_600_000), types: ['mail.complained'] },
    null,
  ],
  [
    'time: after + rare type + mailbox',
    { occurred_after: iso(min + 5 * DAY), types: ['mail.complained'], mailbox_ids: [MAILBOXES[3]] },
    null,
  ],
  ['key: 1 sparse mailbox', {}, [SPARSE_MAILBOXES[0]!]],
  ['key: 33 mailboxes (2 sparse + 31 unknown)', {}, [...SPARSE_MAILBOXES, ...unknown(31)]],
  ['key: 100 mailboxes (2 sparse + 98 unknown)', {}, [...SPARSE_MAILBOXES, ...unknown(98)]],
  ['key: 33 busy mailboxes', {}, MAILBOXES.slice(0, 33)],
];

const tokens = new PageTokenCodec(services.cursors);
const run = async (workspaceId: string, input: Record<string, unknown>, scope: string[] | null) => {
  const ctx = { ...services, principal: permit(principal(workspaceId, scope), 'read') };
  const started = performance.now();
  const outcome = await runOperation('list_events', ctx, input as ListEventsRequest);
  const ms = performance.now() - started;
  const text = typeof outcome.json === 'string' ? outcome.json : Buffer.concat(outcome.json).toString('utf8');
  const page = JSON.parse(text) as { events: unknown[]; next_page_token: string | null };
  return { ms, count: page.events.length, bytes: Buffer.byteLength(text), token: page.next_page_token };
};

const fmt = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `\n${values.db}, ${events} events, limit 100 (ms per call: first page median of 5; walk from the middle: median, max, calls, events)`,
);
for (const [label, input, s, rare] of cases) {
  if (values.only && !label.includes(values.only)) continue;
  if (values.skip && values.skip.split('|').some((s) => label.includes(s))) continue;
  const workspaceId = rare ? info.rareWorkspaceId! : info.workspaceId;
  const lastSeq = rare ? info.rareLastSeq! : info.lastSeq;
  const wsInput = { ...input };
  const first: number[] = [];
  let firstCount = 0;
  for (let i = 0; i < 5; i++) {
    const r = await run(workspaceId, wsInput, s);
    first.push(r.ms);
    firstCount = r.count;
  }
  // A token at the middle of the feed, bound to these filters, as the service would issue it.
  const filters = filtersOf(wsInput, s);
  let token: string | null = tokens.encode(workspaceId, Math.floor(lastSeq / 2), filters);
  const walk: number[] = [];
  let walked = 0;
  for (let i = 0; i < calls && token !== null; i++) {
    const r = await run(workspaceId, { ...wsInput, page_token: token }, s);
    walk.push(r.ms);
    walked += r.count;
    token = r.token;
  }
  console.log(
    `${label.padEnd(48)} first ${fmt(median(first)).padStart(7)} ms (${String(firstCount).padStart(3)} ev)   walk ${fmt(median(walk)).padStart(7)} / ${fmt(Math.max(...walk)).padStart(7)} ms, ${String(walk.length).padStart(3)} calls, ${walked} ev${token === null ? ', ended' : ''}`,
  );
}
await db.close();

/** The filters text listEvents binds its tokens to (kept in step with it). */
function filtersOf(input: Record<string, unknown>, _scope: string[] | null): string {
  const types = input.types as string[] | undefined;
  const sortedTypes = types ? [...types].sort() : null;
  const ms = (v: unknown) => (v === undefined ? null : Math.ceil(Date.parse(v as string)));
  return JSON.stringify({
    types: sortedTypes,
    mailbox_ids: input.mailbox_ids === undefined ? null : [...(input.mailbox_ids as string[])].sort(),
    occurred_after: ms(input.occurred_after),
    occurred_before: ms(input.occurred_before),
  });
}
