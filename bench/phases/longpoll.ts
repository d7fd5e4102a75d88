/** Long-poll wake-up latency (`longPollPhase`), on servers of its own, against its floor. */
import { log, quick } from '../config.ts';
import { longPollPhase } from '../long-poll-phase.ts';
import type { Phase } from './phase.ts';

export const longpollPhase: Phase = {
  name: 'longpoll',
  server: 'own',
  compares: true,
  async run(ctx) {
    ctx.result.longpoll = await longPollPhase({
      kind: ctx.kind,
      databaseUrl: ctx.database.url,
      codec: ctx.codec,
      quick,
      log,
      workspaces: ctx.seeded.ingest,
      profileDir: ctx.profileDir,
      root: ctx.root,
    });
  },
};
