import type { Config } from './config.ts';
import { systemClock, type Clock } from './clock.ts';
import { CursorCodec } from './feed/cursor.ts';
import type { Services } from './operations/context.ts';
import type { Db } from './store/db.ts';
import { sharedCursorSecret } from './store/settings.ts';

export async function createServices(db: Db, config: Pick<Config, 'cursorSecret'>, clock: Clock = systemClock): Promise<Services> {
  const secret = config.cursorSecret ?? (await sharedCursorSecret(db));
  return { db, cursors: new CursorCodec(secret), clock };
}
