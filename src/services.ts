import type { Config } from './config.ts';
import { systemClock, type Clock } from './clock.ts';
import { RequestValidator } from './contract/request-validator.ts';
import { CursorCodec } from './feed/cursor.ts';
import { GroupCommit } from './feed/group-commit.ts';
import { FeedHeads } from './feed/heads.ts';
import type { AppServices } from './operations/context.ts';
import { RateLimiter } from './limits/rate-limiter.ts';
import type { Db } from './store/db.ts';
import { sharedCursorSecret } from './store/settings.ts';

export async function createServices(
  db: Db,
  config: Pick<Config, 'cursorSecret' | 'rateLimitPerSecond' | 'rateLimitBurst' | 'webhooksAllowInsecure'>,
  clock: Clock = systemClock,
): Promise<AppServices> {
  const secret = config.cursorSecret ?? (await sharedCursorSecret(db));
  // Knows nothing until a channel opens it (server.ts starts one on Postgres): every poll reads.
  const heads = new FeedHeads();
  return {
    db,
    cursors: new CursorCodec(secret),
    clock,
    heads,
    groupCommit: new GroupCommit(db, clock, heads),
    requestValidator: new RequestValidator(),
    rateLimiter: new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst),
    webhookPolicy: { allowInsecure: config.webhooksAllowInsecure },
  };
}
