/**
 * One database's run: create and seed it, then every selected phase of the phases table in order.
 * Under `--against`, the seeded database is copied for the base's server and every phase that
 * measures a server runs on both sides in turn, alternating which goes first.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CursorCodec } from '../src/feed/cursor.ts';
import { openStore } from '../src/store/open-store.ts';
import { cleanups, events, INGEST_WORKSPACES, interruption, log, options, runId, TAIL_CLIENTS } from './config.ts';
import type { PhaseContext } from './context.ts';
import { copyDatabase, createDatabase, type Database, type Kind } from './databases.ts';
import type { Phase } from './phases/index.ts';
import { memoryOf, ROOT, sampleLoad, startServer } from './processes.ts';
import { seed, SPARSE_MAILBOXES } from './seed.ts';
import { round } from './stats.ts';

/** The base of `--against`: its checkout, built, and the commit it is. */
export interface Base {
  ref: string;
  commit: string;
  root: string;
}

type Seeding = Pick<PhaseContext, 'seeded' | 'codec' | 'sparseSeqs' | 'scopeBoundaries'> & { seed: Record<string, number> };

const seqsOf = async (db: ReturnType<typeof openStore>, workspaceId: string, mailboxes: readonly string[]) =>
  (await db.knex('events').select('seq').where('workspace_id', workspaceId).whereIn('mailbox_id', mailboxes).orderBy('seq')).map(
    (r: { seq: number }) => Number(r.seq),
  );

async function seedDatabase(database: Database): Promise<Seeding> {
  const db = openStore(database.url);
  try {
    await db.migrate();
    const codec = new CursorCodec(await db.sharedCursorSecret());
    log(`[${database.kind}] seeding ${events.toLocaleString('en')} events (+20% in neighbour workspaces)…`);
    const seeded = await seed(db, {
      events,
      ingestWorkspaces: INGEST_WORKSPACES,
      readKeysPerWorkspace: Math.ceil(TAIL_CLIENTS / INGEST_WORKSPACES),
      log,
    });
    if (database.kind === 'postgres') await db.knex.raw('analyze');
    log(`[${database.kind}] seeded in ${seeded.seconds.toFixed(1)} s (${Math.round(seeded.eventsPerSecond)} events/s)`);
    const sparseSeqs = await seqsOf(db, seeded.workspaceId, SPARSE_MAILBOXES);
    const scopeBoundaries = new Map<string, number[]>();
    for (const scope of seeded.scopes) {
      const seqs = await seqsOf(db, seeded.workspaceId, scope.mailboxes);
      scopeBoundaries.set(scope.label, [0, ...seqs.filter((_, i) => (i + 1) % 100 === 0)]);
    }
    return {
      seeded,
      codec,
      sparseSeqs,
      scopeBoundaries,
      seed: {
        events: seeded.events,
        otherEvents: seeded.otherEvents,
        sparseEvents: seeded.sparseEvents,
        seconds: round(seeded.seconds, 1),
        eventsPerSecond: Math.round(seeded.eventsPerSecond),
        envelopeBytesMean: Math.round(seeded.envelopeBytes.mean),
      },
    };
  } finally {
    await db.close();
  }
}

async function startShared(ctx: PhaseContext): Promise<void> {
  if (ctx.server) return;
  if (ctx.profileDir) mkdirSync(ctx.profileDir, { recursive: true });
  const server = await startServer(ctx.database.url, { cpuProfileDir: ctx.profileDir, root: ctx.root });
  cleanups.push(server.stop);
  ctx.server = server;
  ctx.memory.atStartMb ??= round(memoryOf(server.pid)!.rssMb, 1);
}

async function stopShared(ctx: PhaseContext): Promise<void> {
  if (!ctx.server) return;
  const hwm = memoryOf(ctx.server.pid)?.hwmMb;
  if (hwm !== undefined) ctx.memory.peakHwmMb = Math.max(round(hwm, 1), (ctx.memory.peakHwmMb as number | undefined) ?? 0);
  ctx.result.memory = ctx.memory;
  await ctx.server.stop();
  ctx.server = undefined;
}

/** One phase on one side; on the base side a failure is recorded (the base may lack what the phase needs) rather than ending the run. */
async function runPhase(phase: Phase, ctx: PhaseContext): Promise<void> {
  if (phase.server === 'shared') await startShared(ctx);
  else if (phase.server === 'own') await stopShared(ctx);
  if (ctx.side === 'current') return phase.run(ctx);
  log(`[${ctx.kind}] (base) ${phase.name}`);
  try {
    await phase.run(ctx);
  } catch (err) {
    if (interruption.happened) throw err;
    log(`[${ctx.kind}] base failed in ${phase.name}: ${(err as Error).message.slice(0, 2000)}`);
    ((ctx.result.failed ??= {}) as Record<string, string>)[phase.name] = (err as Error).message.slice(0, 2000);
  }
}

/** Every selected phase on this database; returns the current side's results and, under `--against`, the base's. */
export async function benchDatabase(kind: Kind, withRedis: boolean, phases: Phase[], base?: Base) {
  const database = await createDatabase(kind);
  cleanups.push(database.drop);
  const load = sampleLoad();
  const sides: PhaseContext[] = [];
  try {
    const seeding = await seedDatabase(database);
    const copy = base ? await copyDatabase(database, 'base') : undefined;
    if (copy) cleanups.push(copy.drop);
    if (copy && base) await forgetMigrationsUnknownTo(copy, base.root);
    const sideOf = (side: 'current' | 'base', db: Database, root: string): PhaseContext => {
      const { seed: seedFigures, ...shared } = seeding;
      const profileDir = options.profile ? join(options.profile, `${kind}-${runId}${side === 'base' ? '-base' : ''}`) : undefined;
      const result: Record<string, unknown> = { databaseUrl: db.url.replace(/\/\/[^@]*@/, '//'), seed: seedFigures };
      return { kind, side, root, database: db, ...shared, withRedis, profileDir, memory: {}, result };
    };
    sides.push(sideOf('current', database, ROOT));
    if (base && copy) sides.push(sideOf('base', copy, base.root));
    let compared = 0;
    for (const phase of phases) {
      if (phase.only && phase.only !== kind) continue;
      const order = phase.compares ? (compared++ % 2 === 0 ? sides : [...sides].reverse()) : sides.slice(0, 1);
      for (const ctx of order) await runPhase(phase, ctx);
    }
    for (const ctx of sides) await stopShared(ctx);
    const [current, baseSide] = sides;
    return { current: current!.result, base: baseSide?.result };
  } finally {
    const machineLoad = load.stop();
    for (const ctx of sides) {
      await stopShared(ctx).catch(() => {});
      ctx.result.machineLoad = machineLoad;
      if (ctx.side === 'base') await ctx.database.drop();
    }
    await database.drop();
  }
}

/**
 * The base's server refuses a database that records migrations it does not have (knex: "the
 * migration directory is corrupt"): the copy seeded by this code forgets those records. What
 * they made (a table, a nullable column) stays and is ignored by the older code.
 */
async function forgetMigrationsUnknownTo(copy: Database, baseRoot: string): Promise<void> {
  const names = new Set(
    readFileSync(join(baseRoot, 'src/store/common/migrate.ts'), 'utf8')
      .match(/'\d{3}_[a-z0-9_]+'/g)
      ?.map((n) => n.slice(1, -1)),
  );
  const db = openStore(copy.url);
  try {
    const recorded = (await db.knex('knex_migrations').select('name')) as Array<{ name: string }>;
    const unknown = recorded.map((row) => row.name).filter((name) => !names.has(name));
    if (unknown.length > 0) {
      await db.knex('knex_migrations').whereIn('name', unknown).delete();
      log(`[${copy.kind}] the base knows no migration ${unknown.join(', ')}: forgotten in its copy`);
    }
  } finally {
    await db.close();
  }
}
