/**
 * Postgres run: a fresh database on TEST_DATABASE_URL's server, W workspaces, N writers (one pool
 * each, so a killed connection only hurts its own writer), full and restricted readers tailing
 * through the store, and a killer terminating writer backends (some right as COMMIT is sent) and
 * now and then a reader's. After the write phase: wait for every terminated backend to be gone (so
 * an in-flight COMMIT has landed or not), let readers drain to the head, check.
 */
import { randomBytes } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { openHarnessDb } from './real-store.ts';
import { openStore } from '../../src/store/open-store.ts';
import { check } from './check.ts';
import { between, pick, readerSpecs, sleep, type FeedStore } from './model.ts';
import { FeedReader } from './reader.ts';
import { finish, type RunResult } from './result.ts';
import { runWriter } from './writer.ts';

export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';

export interface PostgresRunConfig {
  label: string;
  store: FeedStore;
  control: boolean;
  seconds: number;
  writers: number;
  workspaces: number;
  fullReaders: number;
  restrictedReaders: number;
  kills: boolean;
  /** Chance that a commit gets a pg_terminate_backend fired at it as it is sent. */
  commitKillProbability?: number;
  /** Chance that a writer's socket is cut as it sends COMMIT. */
  commitCutProbability?: number;
  /** Mean pause of the random killer between two kills (ms). */
  killEveryMs?: number;
}

/** The pg Client knex hands a transaction (only its socket is used). */
interface PgConnection {
  connection: { stream: { write: (...args: unknown[]) => boolean; destroy: () => void } };
}

/** Closes the writer's socket right after the COMMIT message is written to it, or right away. */
function cutConnectionAtCommit(conn: PgConnection, afterCommitWritten: boolean): void {
  const stream = conn.connection.stream;
  if (!afterCommitWritten) {
    stream.destroy();
    return;
  }
  const write = stream.write;
  stream.write = function (this: unknown, ...args: unknown[]) {
    const ok = write.apply(this, args);
    const chunk = args[0];
    if (Buffer.isBuffer(chunk) && chunk.includes('COMMIT')) {
      stream.write = write;
      stream.destroy();
    }
    return ok;
  };
}

async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `event_feed_stress_${randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: { connectionString: ADMIN_URL, connectionTimeoutMillis: 3000 } });
  try {
    await admin.raw(`create database ${name}`);
  } finally {
    await admin.destroy();
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const a = knexFactory({ client: 'pg', connection: ADMIN_URL });
      try {
        await a.raw(`drop database if exists ${name} with (force)`);
      } finally {
        await a.destroy();
      }
    },
  };
}

export async function runPostgres(cfg: PostgresRunConfig): Promise<RunResult> {
  const started = Date.now();
  const database = await freshDatabase();
  const dbs: Knex[] = [];
  const open = () => {
    const db = openHarnessDb(database.url);
    // Every kill makes knex warn "Connection Error: …" on the next checkout; expected here, so kept quiet.
    (db.client as { logger: { warn: (msg: string) => void } }).logger.warn = () => {};
    dbs.push(db);
    return db;
  };
  try {
    const setupStore = openStore(database.url);
    dbs.push(setupStore.knex);
    const setup = setupStore.knex;
    await setupStore.migrate();
    await cfg.store.setup(setup);
    const workspaces: string[] = [];
    for (let i = 0; i < cfg.workspaces; i++) workspaces.push((await setupStore.createWorkspace(`stress ${i}`, false, Date.now())).id);
    const admin = open(); // the killer's and the settler's connections

    // --- the killer ---
    const registry = new Map<string, number>(); // writer → backend pid of its open transaction
    const terminated = new Set<number>(); // backends killed or whose socket was cut
    const inFlightKills: Array<Promise<unknown>> = [];
    let kills = 0;
    let commitKills = 0;
    let readerKills = 0;
    const terminate = (pid: number) => {
      terminated.add(pid);
      return terminateBackend(admin, pid);
    };
    const commitKillProbability = cfg.kills ? (cfg.commitKillProbability ?? 0.04) : 0;
    const commitCutProbability = cfg.kills ? (cfg.commitCutProbability ?? 0.03) : 0;
    let cuts = 0;

    const deadline = Date.now() + cfg.seconds * 1000;
    const killer = async () => {
      const mean = cfg.killEveryMs ?? 120;
      while (Date.now() < deadline) {
        await sleep(between(mean / 4, (mean * 7) / 4));
        if (Date.now() >= deadline) break;
        if (Math.random() < 0.1) {
          // A reader's backend, busy or idle between pages: the reader must retry from the same cursor.
          readerKills += await killAReader(admin);
          continue;
        }
        const entries = [...registry.values()];
        if (entries.length && (await terminate(pick(entries)))) kills++;
      }
    };

    // --- readers ---
    let writersDone = false;
    const specs = readerSpecs(cfg.fullReaders, cfg.restrictedReaders);
    const readers = specs.map((spec) => new FeedReader(spec, workspaces, cfg.store, open()));
    const reading = readers.map((reader) => reader.run(() => writersDone));

    // --- writers ---
    const writing = Array.from({ length: cfg.writers }, (_, i) => {
      const name = `w${i}`;
      let pid = 0;
      let conn: PgConnection | undefined;
      return runWriter({
        name,
        db: open(),
        store: cfg.store,
        workspaces,
        deadline,
        commitErrorIsUnknown: true,
        onBegin: async (trx) => {
          pid = (await trx.raw('select pg_backend_pid() as pid')).rows[0].pid;
          conn = await (trx.client as unknown as { acquireConnection(): Promise<PgConnection> }).acquireConnection();
          registry.set(name, pid);
        },
        beforeCommit: () => {
          const r = Math.random();
          if (r < commitKillProbability) {
            // pg_terminate_backend fired without waiting, at once or 1–3 ms later: it races the COMMIT the
            // writer is about to send. Before the server runs COMMIT: rolled back, the client gets an error
            // (UNKNOWN, resolves absent). Once COMMIT runs, Postgres holds the signal until the reply is
            // sent: the client sees success, the kill hits an idle connection.
            const target = pid;
            const delay = Math.random() < 0.4 ? 0 : between(1, 3);
            const kill = sleep(delay)
              .then(() => terminate(target))
              .then((ok) => {
                if (ok) {
                  kills++;
                  commitKills++;
                }
              });
            inFlightKills.push(kill.catch(() => undefined));
          } else if (r < commitKillProbability + commitCutProbability && conn) {
            // The network dies around COMMIT: half the time the socket is closed as soon as the COMMIT
            // message is written (the server commits, the reply is lost: UNKNOWN, resolves present), half
            // the time before it is written (UNKNOWN, resolves absent).
            cuts++;
            terminated.add(pid); // its backend must be gone too before readers drain
            cutConnectionAtCommit(conn, Math.random() < 0.5);
          }
        },
        onEnd: () => registry.delete(name),
      });
    });
    const killing = cfg.kills ? killer() : Promise.resolve();

    const writerResults = await Promise.allSettled(writing);
    await killing;
    await Promise.all(inFlightKills);
    // Every killed or cut backend gone: an interrupted COMMIT is now durable or void, never pending.
    await untilBackendsGone(admin, terminated);
    writersDone = true;
    const readerOutcomes = await Promise.allSettled(reading);
    for (const o of [...writerResults, ...readerOutcomes]) if (o.status === 'rejected') throw o.reason;
    const writerStats = writerResults.map((o) => (o as PromiseFulfilledResult<Awaited<(typeof writing)[number]>>).value);

    const readerResults = readers.map((r) => r.result());
    const checked = await checkRun(cfg, admin, workspaces, writerStats, readerResults);
    return finish(
      {
        label: cfg.label,
        backend: 'postgres',
        store: cfg.store.name,
        control: cfg.control,
        writers: cfg.writers,
        workspaces: cfg.workspaces,
        readers: specs.length,
        seconds: cfg.seconds,
        kills,
        commitKills,
        readerKills,
        cuts,
        wallMs: Date.now() - started,
      },
      checked,
      readerResults,
      writerStats,
    );
  } finally {
    await cfg.store.teardown?.();
    await Promise.allSettled(dbs.map((db) => db.destroy()));
    await database.drop();
  }
}

/** Terminates a backend of this run's database: never another session that happens to get a recycled pid. */
async function terminateBackend(admin: Knex, pid: number): Promise<boolean> {
  const res = await admin.raw(
    'select pg_terminate_backend(pid) as ok from pg_stat_activity where pid = ? and datname = current_database()',
    [pid],
  );
  return res.rows[0]?.ok === true;
}

/** A reader's backend, busy or idle between pages (the reader must retry from the same cursor): how many were killed. */
async function killAReader(admin: Knex): Promise<number> {
  const res = await admin.raw(
    `select pg_terminate_backend(pid) as ok from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'
        and query ilike 'select%order by%' and query not ilike '%pg_stat_activity%' limit 1`,
  );
  return res.rows.filter((row: { ok: boolean }) => row.ok).length;
}

/** Waits until every killed or cut backend is gone (15 s at most). */
async function untilBackendsGone(admin: Knex, terminated: ReadonlySet<number>): Promise<void> {
  for (let waited = 0; ; waited += 20) {
    const alive = terminated.size
      ? await admin('pg_stat_activity')
          .whereIn('pid', [...terminated])
          .andWhere('datname', admin.raw('current_database()'))
          .select('pid')
      : [];
    if (alive.length === 0) return;
    if (waited > 15000) throw new Error('terminated backends still present after 15 s');
    await sleep(20);
  }
}

/** The run's records against what the database holds at the end (check). */
async function checkRun(
  cfg: PostgresRunConfig,
  admin: Knex,
  workspaces: string[],
  writerStats: Array<{ records: Parameters<typeof check>[2] }>,
  readerResults: Parameters<typeof check>[3],
) {
  const truth = await cfg.store.truth(admin);
  const counters = await cfg.store.counters?.(admin);
  return check(
    cfg.store,
    workspaces,
    writerStats.flatMap((w) => w.records),
    readerResults,
    truth,
    counters,
  );
}
