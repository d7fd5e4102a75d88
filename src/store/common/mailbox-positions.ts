import type { Knex } from 'knex';

type ReadRows = <T>(sql: string, bindings: readonly Knex.Value[]) => Promise<T[]>;

/**
 * Store.lastSeqOfMailboxes: the highest seq at or below `throughSeq` among the retained events of
 * these mailboxes, 0 when none: one statement, one backward probe of events_workspace_mailbox_seq
 * per mailbox (at most 100 per key), whatever the other mailboxes hold. What a restricted key's
 * positions are made of (feed_cursor), so that they move only with its own mailboxes' events.
 */
export async function lastSeqOfMailboxes(
  readRows: ReadRows,
  workspaceId: string,
  mailboxes: readonly string[],
  throughSeq: number,
): Promise<number> {
  if (mailboxes.length === 0 || throughSeq <= 0) return 0;
  const probe = `SELECT (SELECT seq FROM events WHERE workspace_id = ? AND mailbox_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1) AS seq`;
  const sql = `SELECT MAX(seq) AS seq FROM (${mailboxes.map(() => probe).join(' UNION ALL ')}) probes`;
  const bindings = mailboxes.flatMap((mailbox) => [workspaceId, mailbox, throughSeq]);
  const [row] = await readRows<{ seq: number | string | null }>(sql, bindings);
  return Number(row?.seq ?? 0);
}
