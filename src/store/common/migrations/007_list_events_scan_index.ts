import type { Knex } from 'knex';
import { nothing, type KindMigration } from '../migration-steps.ts';

/*
 * SQLite only: an index (workspace_id, seq, type, mailbox_id, occurred_at_ms) for list_events'
 * bounded scans (scanCandidates). A scan that checks filters over a range of seqs
 * reads every one of those columns from this index and never the rows: on SQLite a row's
 * occurred_at_ms lies after its envelope in the record, so reading it from a row with a large
 * envelope walks the whole overflow chain (~16 pages for a 63 KB event), and on SQLite every read
 * holds the event loop. The same index gives a page's facts (type, occurred_at) by seq.
 * Postgres keeps occurred_at_ms in the heap tuple and a large envelope out of line (TOAST): reading
 * it costs no more than the tuple, so Postgres does without this index and its cost on every append.
 * Cost on SQLite: one more b-tree insert per append, ~70 bytes per event.
 */
async function upOnSqlite(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX events_workspace_seq_filters ON events (workspace_id, seq, type, mailbox_id, occurred_at_ms)');
}

async function downOnSqlite(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX events_workspace_seq_filters');
}

export const up: KindMigration['up'] = { sqlite: upOnSqlite, postgres: nothing };
export const down: KindMigration['down'] = { sqlite: downOnSqlite, postgres: nothing };
