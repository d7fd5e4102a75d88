import type { Knex } from 'knex';
import type { AppendOptions, FirstSeqs, PageQuery, PruneResult, SortOutStored, Store, StoredPage, WorkspaceAppend } from '../port.ts';
import type { SearchPage, SearchQuery } from './event-search.ts';
import type { SearchSession } from './search-session.ts';

/**
 * What one database folder (store/sqlite/, store/postgres/) gives the common code: its hot paths
 * (append, page, list_events' statements), the few places its SQL differs, and its capabilities.
 * common/store.ts builds the Store from it. A new database is a new folder implementing this.
 */
export interface Adapter extends Pick<Store, 'description' | 'knex' | 'appends' | 'othersWritesVersion' | 'listenForChanges' | 'replicas'> {
  /** Appends `sorted` (workspace order) after `sortOut` dropped what is stored; see Store.append. */
  append(sorted: WorkspaceAppend[], storedAt: number, sortOut: SortOutStored, options: AppendOptions): Promise<FirstSeqs>;
  /** Store.pruneAll where this database prunes its own way (Postgres drops partitions); otherwise common/retention.ts deletes rows. */
  prune?(cutoffMs: number, batchSize: number): Promise<PruneResult[]>;
  /** One page, read now (common/feed-page.ts adds the read-ahead). */
  queryPage(q: PageQuery): Promise<StoredPage>;
  /** list_events' statements on this database (common/event-search.ts plans them). */
  searchSession(): SearchSession;
  /** A list_events page from a read replica, when one can answer it as the primary would (postgres/replicas.ts); undefined: ask the primary. */
  searchOnReplica?(q: SearchQuery): Promise<SearchPage | undefined>;
  /**
   * Rows of a small fixed read (`?` placeholders), off the write path where the database has one
   * (SQLite's read connection never waits behind a write transaction).
   */
  readRows<T>(sql: string, bindings: readonly Knex.Value[]): Promise<T[]>;
  /**
   * The stored_at of one event, found by its primary key (workspace_id, seq); undefined when there
   * is none. `within` (inclusive, infinite ends for none) bounds it where that narrows the lookup
   * (Postgres: only the weekly partitions between them); an event outside them may be missed.
   */
  storedAtOf(workspaceId: string, seq: number, within?: { fromMs: number; toMs: number }): Promise<number | undefined>;
  /** Run first in every Store.write transaction (SQLite takes its write lock up front). */
  beginWrite(trx: Knex.Transaction): Promise<void>;
  /** Holds a row until the transaction ends, where writers could otherwise interleave (Postgres); nothing where writes are serialized. */
  lockRow(trx: Knex.Transaction, table: 'workspaces' | 'webhook_endpoints', id: string): Promise<void>;
  /** The SQL of the few statements common code writes that differ per database. */
  sql: {
    /** The two-argument maximum: GREATEST (Postgres), MAX (SQLite). */
    greatest: string;
    /** Appended to a SELECT of rows to lease: skip those another transaction holds (Postgres), nothing where writes are serialized. */
    skipLocked: string;
    /** Prefix that keeps a column's index out of a search (SQLite's unary +), or nothing. */
    notIndexed: string;
  };
  /** Applies pending migrations (common/migrate.ts), serialized across instances where needed. */
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}
