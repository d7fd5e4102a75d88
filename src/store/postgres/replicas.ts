import type { Knex } from 'knex';
import type { Logger } from '../../base/log.ts';
import { searchEvents, type SearchPage, type SearchQuery } from '../common/event-search.ts';
import { feedHead } from '../common/events.ts';
import { postgresRows } from './rows.ts';
import { isWhole, type PageQuery, type ReplicaStatus, type StoredPage } from '../port.ts';
import { openPostgresKnex } from './connection.ts';
import { queryPostgresPage } from './page.ts';
import { postgresSearchSession } from './search.ts';

/** How often each replica is probed (reachable, still a standby) while the service watches them. */
const PROBE_INTERVAL_MS = 1000;
/** A probe or a page read on a replica that takes longer than this counts as a failure: the primary answers instead. */
const REPLICA_TIMEOUT_MS = 1000;
/** Connections per replica: pages only, and a request never waits on a replica for long. */
const REPLICA_POOL = 5;

interface Replica {
  name: string;
  knex: Knex;
  serving: boolean;
  reason: string;
  lagMs: number | null;
}

/**
 * Streaming replicas of the primary (DATABASE_READ_URLS) that serve catch-up pages of the feed.
 *
 * A replica applies the primary's commits in commit order, so what it holds is the primary's feed
 * as it was a moment ago: a prefix, never a gap (../shared/notes/ordering.md). A page read there
 * that comes back whole (`limit` events, or stopped at the byte cap) is therefore exactly the page
 * the primary gives now: its events are the first after the cursor, and any event the replica has
 * not received yet lies after them. Such a page is served. A page that comes back short may be
 * short only because the replica is behind (an event whose emit was answered before the poll
 * arrived could be missing): it is read again on the primary, which keeps every decision about
 * the head ("nothing new", read-your-writes, the heads it teaches). So a lagging replica costs
 * a read, never a wrong answer, and nothing about lag has to be measured to stay correct.
 *
 * A replica serves only while its last probe succeeded and showed a standby (a promoted one no
 * longer follows this primary); a failed or slow read takes it out until the next good probe.
 * Until `watch` starts probing, none serves.
 */
export class ReadReplicas {
  readonly #replicas: Replica[];
  #next = 0;

  constructor(urls: readonly string[]) {
    this.#replicas = urls.map((url, i) => ({
      name: `replica ${i + 1} (${hostOf(url)})`,
      knex: openPostgresKnex(url, { queryTimeoutMs: REPLICA_TIMEOUT_MS * 5, poolMax: REPLICA_POOL }),
      serving: false,
      reason: 'not probed yet',
      lagMs: null,
    }));
  }

  /** The page, from a serving replica, when it comes back whole; undefined: the primary must answer. */
  async wholePage(q: PageQuery): Promise<StoredPage | undefined> {
    const count = this.#replicas.length;
    for (let tried = 0; tried < count; tried++) {
      const replica = this.#replicas[this.#next++ % count]!;
      if (!replica.serving) continue;
      try {
        const page = await withTimeout(queryPostgresPage(replica.knex, q), 'page read');
        return isWhole(page, q.limit) ? { ...page, fromReplica: true, prunedThrough: undefined } : undefined;
      } catch (err) {
        this.#stopServing(replica, `read failed: ${messageOf(err)}`);
      }
    }
    return undefined;
  }

  /**
   * A later page of list_events (one with a page token), from a serving replica that holds every
   * event below the token: those were all committed before the token was handed out, so once the
   * replica's head reaches them (checked first: its later statements only see more) its page is the
   * primary's. The first page, read from the head down, stays on the primary (read-your-writes).
   */
  async search(q: SearchQuery): Promise<SearchPage | undefined> {
    if (q.beforeSeq === null) return undefined;
    const count = this.#replicas.length;
    for (let tried = 0; tried < count; tried++) {
      const replica = this.#replicas[this.#next++ % count]!;
      if (!replica.serving) continue;
      try {
        const head = await withTimeout(
          feedHead((sql, bindings) => postgresRows(replica.knex, sql, bindings), q.workspaceId),
          'head read',
        );
        if (head < q.beforeSeq - 1) continue; // behind the token: the primary answers
        return await withTimeout(searchEvents(postgresSearchSession(replica.knex), q), 'list_events');
      } catch (err) {
        this.#stopServing(replica, `read failed: ${messageOf(err)}`);
      }
    }
    return undefined;
  }

  status(): ReplicaStatus[] {
    return this.#replicas.map(({ name, serving, reason, lagMs }) => ({ name, serving, ...(serving ? { lagMs } : { reason }) }));
  }

  /** Probes every replica now and every PROBE_INTERVAL_MS, logging each one that starts or stops serving. */
  watch(log: Logger): { stop(): Promise<void> } {
    this.#log = log;
    let stopped = false;
    const probeAll = async () => void (await Promise.all(this.#replicas.map((replica) => this.#probe(replica))));
    let running: Promise<void> = probeAll();
    const timer = setInterval(() => {
      running = running.then(() => (stopped ? undefined : probeAll()));
    }, PROBE_INTERVAL_MS);
    timer.unref();
    return {
      stop: async () => {
        stopped = true;
        clearInterval(timer);
        await running;
      },
    };
  }

  close(): Promise<unknown> {
    return Promise.all(this.#replicas.map((replica) => replica.knex.destroy()));
  }

  #log: Logger | undefined;

  async #probe(replica: Replica): Promise<void> {
    try {
      const result = await withTimeout(
        replica.knex.raw(
          'SELECT pg_is_in_recovery() AS standby, (extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000)::bigint AS lag_ms',
        ) as Promise<{ rows: Array<{ standby: boolean; lag_ms: string | null }> }>,
        'probe',
      );
      const row = result.rows[0]!;
      if (!row.standby) return this.#stopServing(replica, 'not a standby (promoted?)');
      replica.lagMs = row.lag_ms === null ? null : Number(row.lag_ms);
      if (!replica.serving) {
        replica.serving = true;
        replica.reason = '';
        this.#log?.info({ replica: replica.name }, 'read replica serving catch-up pages');
      }
    } catch (err) {
      this.#stopServing(replica, `probe failed: ${messageOf(err)}`);
    }
  }

  #stopServing(replica: Replica, reason: string): void {
    const was = replica.serving;
    replica.serving = false;
    replica.reason = reason;
    if (was) this.#log?.warn({ replica: replica.name, reason }, 'read replica no longer serving: the primary answers instead');
  }
}

/** Host and port of a Postgres URL: never its user or password. */
function hostOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    return 'unparsable URL';
  }
}

const messageOf = (err: unknown) =>
  String((err as Error)?.message ?? err)
    .split('\n')[0]!
    .replace(/^.* - /, '')
    .slice(0, 200);

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    work.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took more than ${REPLICA_TIMEOUT_MS} ms`)), REPLICA_TIMEOUT_MS);
    }),
  ]);
}
