import type { Knex } from 'knex';
import type { AppendOptions, FirstSeqs, PageQuery, PruneResult, SortOutStored, Store, StoredPage, WorkspaceAppend } from '../port.ts';
import type { SearchPage, SearchQuery } from './event-search.ts';
import type { SearchSession } from './search-session.ts';
import type { SqlPieces } from './sql.ts';
import type { KindErrors } from '../database-kind.ts';

/**
 * What one database folder (store/sqlite/, store/postgres/) gives the common code: its hot paths
 * (append, page, list_events' statements), the few places its SQL differs, and its capabilities.
 * createStore builds the Store from it. A new database is a new folder implementing this, and its
 * kind (DatabaseKind) that builds it.
 */
export interface Adapter extends Pick<Store, 'description' | 'appends' | 'othersWritesVersion' | 'listenForChanges' | 'replicas'> {
  /** The knex handle underneath (OpenedStore.knex). */
  readonly knex: Knex;
  /** Appends `sorted` (workspace order) after `sortOut` dropped what is stored; see Store.append. */
  append(sorted: WorkspaceAppend[], storedAt: number, sortOut: SortOutStored, options: AppendOptions): Promise<FirstSeqs>;
  /** Store.pruneAll where this database prunes its own way (Postgres drops partitions); otherwise pruneAll deletes rows. */
  prune?(cutoffMs: number, batchSize: number): Promise<PruneResult[]>;
  /** One page, read now (pageReader adds the read-ahead). */
  queryPage(q: PageQuery): Promise<StoredPage>;
  /** list_events' statements on this database (searchEvents plans them). */
  searchSession(): SearchSession;
  /** A list_events page from a read replica, when one can answer it as the primary would (ReadReplicas); undefined: ask the primary. */
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
  sql: SqlPieces;
  /** How its failures are told apart (DatabaseKind.errors). */
  errors: KindErrors;
  /** Applies pending migrations (runMigrations), serialized across instances where needed. */
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}
