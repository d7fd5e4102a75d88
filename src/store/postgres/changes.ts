import { randomBytes } from 'node:crypto';
import type { Client, Notification } from 'pg';
import { safeErrorFields, type Logger } from '../../base/log.ts';
import type { ChangeEvents } from '../port/changes.ts';
import type { ChangeListener } from '../port.ts';
import { pgModule } from './connection.ts';

/** Where each append announces its workspace's new last seq, "<workspace> <seq>", as it commits (appendOnPostgres). */
export const HEADS_CHANNEL = 'event_feed_heads';

/** How often the channel proves itself with a notification sent to itself, and how long one may take. */
const PING_INTERVAL_MS = 10_000;
const PING_TIMEOUT_MS = 3_000;
const RECONNECT_MIN_MS = 200;
const RECONNECT_MAX_MS = 10_000;

/** Where the trigger of migration 005 announces a changed or deleted API key, by its id. */
export const KEYS_CHANNEL = 'event_feed_keys';

/** The listening connection's application_name, as pg_stat_activity shows it. */
export const HEAD_LISTENER_NAME = 'event-feed heads';

/**
 * Tells `events` of every commit on a Postgres database (headMoved) and of every API key changed
 * (keyChanged): a connection of its own (LISTEN needs one that stays) listens on HEADS_CHANNEL,
 * where each append's counter statement notifies "<workspace> <last seq>" (appendOnPostgres),
 * and on KEYS_CHANNEL, where a trigger notifies the id of a key updated or deleted (migration
 * 005). The channel is reported `opened` only once a notification this connection sent itself
 * came back (a pooler that does not carry notifications, such as PgBouncer in transaction mode,
 * never gets that far), and checked again every PING_INTERVAL_MS; a lost connection, or a ping or
 * a round trip not back in time, is reported `lost` until the channel is back.
 */
export function listenForChanges(
  databaseUrl: string,
  events: ChangeEvents,
  log: Logger,
  options: { pingIntervalMs?: number; pingTimeoutMs?: number } = {},
): ChangeListener {
  const pingIntervalMs = options.pingIntervalMs ?? PING_INTERVAL_MS;
  const pingTimeoutMs = options.pingTimeoutMs ?? PING_TIMEOUT_MS;
  const pg = pgModule();
  let stopped = false;
  let client: Client | undefined;
  let retryMs = RECONNECT_MIN_MS;
  let pingTimer: NodeJS.Timeout | undefined;
  let pingDeadline: NodeJS.Timeout | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let awaitedPing: string | undefined;
  let live = false;

  /** Forgets every head and lets `dropped` go; while running, connects again after a pause. */
  const drop = (dropped: Client, reason: string, err?: unknown): Promise<void> => {
    if (client !== dropped) return Promise.resolve(); // already let go
    const wasLive = live;
    live = false;
    events.lost();
    clearTimeout(pingTimer);
    clearTimeout(pingDeadline);
    awaitedPing = undefined;
    client = undefined;
    dropped.removeAllListeners('notification');
    const ended = dropped.end().catch(() => {});
    if (stopped) return ended;
    if (wasLive)
      log.warn({ reason, ...(err ? safeErrorFields(err) : {}) }, 'feed heads: channel lost; polls read the database until it is back');
    reconnectTimer = setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, RECONNECT_MAX_MS);
    return ended;
  };

  const ping = (current: Client) => {
    awaitedPing = `ping ${randomBytes(9).toString('base64url')}`;
    pingDeadline = setTimeout(() => void drop(current, 'a ping did not come back in time'), pingTimeoutMs);
    current.query('SELECT pg_notify($1, $2)', [HEADS_CHANNEL, awaitedPing]).catch((err: unknown) => drop(current, 'ping failed', err));
  };

  /** The round trip given with `opened`: once back, every commit made before it was sent has been reported. */
  const roundTrip = (current: Client) => (): Promise<void> => {
    if (client !== current) return Promise.reject(new Error('channel lost'));
    return new Promise((resolve, reject) => {
      const deadline = setTimeout(() => {
        reject(new Error('round trip timed out'));
        void drop(current, 'a round trip did not come back in time');
      }, pingTimeoutMs);
      // The empty statement: nothing to parse or plan, yet the notifications come before its answer.
      current.query('').then(
        () => (clearTimeout(deadline), resolve()),
        (err: unknown) => (clearTimeout(deadline), reject(err), void drop(current, 'round trip failed', err)),
      );
    });
  };

  const onNotification = (current: Client, message: Notification) => {
    const payload = message.payload ?? '';
    if (message.channel === KEYS_CHANNEL) {
      events.keyChanged(payload);
      return;
    }
    if (payload === awaitedPing) {
      clearTimeout(pingDeadline);
      awaitedPing = undefined;
      if (!live) {
        live = true;
        events.opened(roundTrip(current));
      }
      retryMs = RECONNECT_MIN_MS;
      pingTimer = setTimeout(() => ping(current), pingIntervalMs);
      return;
    }
    const space = payload.indexOf(' ');
    const seq = Number(payload.slice(space + 1));
    if (space > 0 && Number.isSafeInteger(seq)) events.headMoved(payload.slice(0, space), seq);
  };

  async function connect(): Promise<void> {
    if (stopped) return;
    const candidate = new pg.Client({
      connectionString: databaseUrl,
      keepAlive: true,
      connectionTimeoutMillis: 3000,
      application_name: HEAD_LISTENER_NAME,
    });
    client = candidate;
    candidate.on('error', (err) => void drop(candidate, 'connection error', err));
    candidate.on('end', () => void drop(candidate, 'connection ended'));
    candidate.on('notification', (message) => onNotification(candidate, message));
    try {
      await candidate.connect();
      await candidate.query(`LISTEN ${HEADS_CHANNEL}; LISTEN ${KEYS_CHANNEL}`);
      if (client === candidate) ping(candidate);
    } catch (err) {
      await drop(candidate, 'could not listen', err);
    }
  }

  void connect();
  return {
    async stop() {
      stopped = true;
      clearTimeout(reconnectTimer);
      live = false;
      events.lost();
      if (client) await drop(client, 'stopped');
    },
  };
}
