import type { Knex } from 'knex';
import type { KindName, PerKind } from '../database-kind.ts';

/** One direction of a migration on one database. */
export type MigrationStep = (knex: Knex) => Promise<void>;

/**
 * A migration that differs per database: its step on each kind, so a new kind fails to compile
 * until every such migration says what it does there. Migrations alike on every database stay
 * plain `up`/`down` modules (knex's Knex.Migration).
 */
export interface KindMigration {
  readonly up: PerKind<MigrationStep>;
  readonly down: PerKind<MigrationStep>;
}

/** The step of a database that a migration leaves alone. */
export const nothing: MigrationStep = async () => {};

/** The migration as knex runs it on `kind`. */
export function migrationOn(migration: Knex.Migration | KindMigration, kind: KindName): Knex.Migration {
  if (typeof migration.up === 'function') return migration as Knex.Migration;
  const { up, down } = migration as KindMigration;
  return { up: up[kind], down: down[kind] };
}
