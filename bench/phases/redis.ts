/** The Redis peer: the measured workspace's envelopes, in feed order, into a stream of a run-unique key, read back the same way. */
import { Redis } from 'ioredis';
import { openStore } from '../../src/store/open-store.ts';
import { cleanups, log, P, REDIS_URL, runId } from '../config.ts';
import { medianRun, type PhaseContext, type Run } from '../context.ts';
import { cpuSecondsOf, runClient } from '../processes.ts';
import { round } from '../stats.ts';
import type { Phase } from './phase.ts';

async function loadStream(ctx: PhaseContext, redis: Redis, key: string): Promise<number> {
  const db = openStore(ctx.database.url);
  try {
    let after = 0;
    let loaded = 0;
    for (;;) {
      const rows = await db.readPageRows({ workspaceId: ctx.seeded.workspaceId, afterSeq: after, limit: 5000, mailboxes: null });
      if (rows.length === 0) break;
      const pipeline = redis.pipeline();
      for (const row of rows) pipeline.xadd(key, '*', 'e', row.envelope);
      await pipeline.exec();
      loaded += rows.length;
      after = Number(rows.at(-1)!.seq);
    }
    return loaded;
  } finally {
    await db.close();
  }
}

async function redisPeer(ctx: PhaseContext) {
  const key = `event-feed-bench:${runId}:stream`;
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  await redis.connect();
  const drop = async () => void (await redis.unlink(key));
  cleanups.push(async () => {
    await drop();
    redis.disconnect();
  });
  try {
    const t0 = performance.now();
    const loaded = await loadStream(ctx, redis, key);
    const loadSeconds = (performance.now() - t0) / 1000;
    const memory = Number(await redis.memory('USAGE', key, 'SAMPLES', '0'));
    // The Redis server's own CPU per page, when it runs on this machine (its pid is then readable).
    const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    const cpu0 = cpuSecondsOf(redisPid);
    const runs = await runClient<Run[]>('client-direct.ts', {
      mode: 'redis',
      redisUrl: REDIS_URL,
      key,
      count: 500,
      warmupPages: P.warmupPages,
      expectEvents: loaded,
      runs: P.replayRuns,
    });
    const pages = runs.reduce((n, r) => n + Math.ceil(r.events / 500) + 1, P.warmupPages);
    const serverCpuMsPerPage = Number.isFinite(cpu0) ? round(((cpuSecondsOf(redisPid) - cpu0) * 1000) / pages) : undefined;
    return { key, loaded, loadSeconds: round(loadSeconds, 1), streamMb: round(memory / 1e6, 1), ...medianRun(runs), serverCpuMsPerPage };
  } finally {
    await drop();
    redis.disconnect();
  }
}

export const redisPhase: Phase = {
  name: 'redis',
  server: 'none',
  compares: false,
  async run(ctx) {
    if (!ctx.withRedis) return;
    log(`[${ctx.kind}] Redis Streams peer…`);
    ctx.result.redis = await redisPeer(ctx);
  },
};
