import type { Knex } from 'knex';
import type { WebhookBacklog } from '../port.ts';
import type { SqlPieces } from './sql.ts';

/*
 * Pending deliveries of enabled endpoints, counted up to a cap: the count stops there, so a scrape
 * reads at most `cap` index entries however large a backlog grows. A disabled endpoint's
 * deliveries are kept (sent if it is enabled again) but owed to nobody now: they are left out, or
 * an endpoint gone for good would keep the gauges high forever.
 */
const COUNT_PENDING = `
  SELECT COUNT(*) AS n FROM (
    SELECT 1 FROM webhook_endpoints e JOIN webhook_deliveries d ON d.endpoint_id = e.id
     WHERE e.enabled = ? LIMIT ?) pending`;

/*
 * The oldest of what each enabled endpoint sends next: its pending delivery of the lowest event
 * seq (the dispatcher sends in that order), found by one probe of the unique
 * (endpoint_id, event_seq) index per endpoint.
 */
const OLDEST_PENDING = `
  SELECT MIN((SELECT d.created_at FROM webhook_deliveries d WHERE d.endpoint_id = e.id ORDER BY d.event_seq LIMIT 1)) AS oldest
    FROM webhook_endpoints e WHERE e.enabled = ?`;

/** What webhooks owe now, cheaply enough to ask at every metrics scrape. */
export async function webhookBacklog(db: Knex, sql: SqlPieces, cap: number): Promise<WebhookBacklog> {
  const [count] = await sql.rows<{ n: number | string }>(db, COUNT_PENDING, [true, cap]);
  const [oldest] = await sql.rows<{ oldest: number | string | null }>(db, OLDEST_PENDING, [true]);
  return { pending: Number(count?.n ?? 0), oldestCreatedAt: oldest?.oldest == null ? null : Number(oldest.oldest) };
}
