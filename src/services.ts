import type { Config } from './config.ts';
import { systemClock, type Clock } from './clock.ts';
import { RequestValidator } from './contract/request-validator.ts';
import { CursorCodec } from './feed/cursor.ts';
import { GroupCommit } from './feed/group-commit.ts';
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
  return {
    db,
    cursors: new CursorCodec(secret),
    clock,
    groupCommit: new GroupCommit(db, clock),
    requestValidator: new RequestValidator(),
    rateLimiter: new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst),
    webhookPolicy: { allowInsecure: config.webhooksAllowInsecure },
  };
}
