/**
 * NEGATIVE CONTROL, not the service's code: the feed every naive implementation writes. A bigserial
 * id handed out at insert time (before commit, never rolled back) and readers asking for
 * `id > cursor ORDER BY id`. A transaction that took id 41 can commit after one that took 42; a reader
 * already past 42 never sees 41. Run through the same writers, readers and checker as the real store,
 * it must be caught losing events, which shows the harness can see the bug it is about.
 */
import { seenFromEnvelope, type FeedStore } from './model.ts';

export const naiveStore: FeedStore = {
  name: 'naive bigserial (control)',
  gapFree: false,
  async setup(db) {
    await db.schema.createTable('naive_events', (t) => {
      t.bigIncrements('id');
      t.text('workspace_id').notNullable();
      t.text('event_id').notNullable();
      t.text('mailbox_id');
      t.text('envelope').notNullable();
      t.index(['workspace_id', 'id']);
    });
  },
  async append(trx, ws, events) {
    await trx('naive_events').insert(
      events.map((e) => ({
        workspace_id: ws,
        event_id: e.id,
        mailbox_id: e.subject.refs.mailbox_id ?? null,
        envelope: JSON.stringify({ id: e.id, type: e.type, account: ws, subject: e.subject, data: e.data, v: 1 }),
      })),
    );
  },
  async read(db, principal, after, limit) {
    const afterId = after === undefined ? 0 : Number(after);
    const q = db('naive_events')
      .select('id', 'envelope')
      .where('workspace_id', principal.workspaceId)
      .andWhere('id', '>', afterId)
      .orderBy('id')
      .limit(limit);
    if (principal.mailboxes !== null) q.whereIn('mailbox_id', principal.mailboxes as string[]);
    const rows = await q;
    return {
      events: rows.map((r) => seenFromEnvelope(r.envelope)),
      nextCursor: String(rows.length ? Number(rows.at(-1)!.id) : afterId),
    };
  },
  cursorKey: (_ws, cursor) => Number(cursor),
  async truth(db) {
    const rows = await db('naive_events').select('workspace_id', 'event_id', 'id', 'mailbox_id');
    return rows.map((r) => ({ ws: r.workspace_id, id: r.event_id, key: Number(r.id), mailbox: r.mailbox_id ?? null }));
  },
};
