import type { Knex as Db } from 'knex';
import { newWorkspaceId } from '../../base/ids.ts';
import type { Workspace } from '../port.ts';

export async function createWorkspace(db: Db, name: string, verified: boolean, now: number): Promise<Workspace> {
  const workspace = { id: newWorkspaceId(), name, verified };
  await db.transaction(async (trx) => {
    await trx('workspaces').insert({ ...workspace, created_at: now });
    await trx('feed_counters').insert({ workspace_id: workspace.id, last_seq: 0 });
  });
  return workspace;
}

export async function findWorkspace(db: Db, id: string): Promise<Workspace | undefined> {
  const row = await db('workspaces').select('id', 'name', 'verified').where({ id }).first();
  return row ? { id: row.id, name: row.name, verified: Boolean(row.verified) } : undefined;
}

export async function countWorkspaces(db: Db): Promise<number> {
  const row = await db('workspaces').count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

/** Every workspace, oldest first (for the CLI: an operator's listing). */
export async function listWorkspaces(db: Db): Promise<Array<Workspace & { created_at: string }>> {
  const rows = await db('workspaces').select('id', 'name', 'verified', 'created_at').orderBy('id');
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    verified: Boolean(row.verified),
    created_at: new Date(Number(row.created_at)).toISOString(),
  }));
}
