import type { Config } from './config.ts';
import { systemClock, type Clock } from './clock.ts';
import { RequestValidator } from './contract/request-validator.ts';
import { CursorCodec } from './feed/cursor.ts';
import { GroupCommit } from './feed/group-commit.ts';
import { FeedHeads } from './feed/heads.ts';
import { RecentEvents } from './feed/recent-events.ts';
import type { AppServices } from './operations/context.ts';
import { MemoryBudget } from './limits/memory-budget.ts';
import { RateLimiter } from './limits/rate-limiter.ts';
import type { VerifiedKeys } from './auth/verified-keys.ts';
import type { ChangeEvents, Store } from './store/port.ts';

const MB = 1024 * 1024;
/** How long a request waits for room in the memory budget before it is refused (429). */
const ADMISSION_WAIT_MS = 1000;

/** What the change channel reports, kept by the feeds' heads and the verified keys. */
export function changeEventsFor(heads: FeedHeads, keys: VerifiedKeys): ChangeEvents {
  return {
    opened: (roundTrip) => (heads.open(roundTrip), keys.open()),
    lost: () => (heads.lose(), keys.lose()),
    headMoved: (workspaceId, seq) => heads.heard(workspaceId, seq),
    keyChanged: (keyId) => keys.heard(keyId),
  };
}

export async function createServices(
  store: Store,
  config: Pick<
    Config,
    'cursorSecret' | 'rateLimitPerSecond' | 'rateLimitBurst' | 'rateLimitPerAddressPerSecond' | 'rateLimitPerAddressBurst' | 'rateLimitBytesPerToken' | 'webhooksAllowInsecure' | 'memoryBudgetMb' | 'webhookRedeliverMaxPending'
  >,
  clock: Clock = systemClock,
): Promise<AppServices> {
  const secret = config.cursorSecret ?? (await store.sharedCursorSecret());
  // With a change channel (Postgres): knows nothing until the channel opens it (server.ts listens).
  // Without (SQLite): used while no other process writes to the file.
  const heads = new FeedHeads(store.othersWritesVersion ? { othersWrites: store.othersWritesVersion } : {});
  // Ages by the clock retention prunes by.
  const recent = new RecentEvents(() => clock.now().getTime());
  return {
    store,
    cursors: new CursorCodec(secret),
    clock,
    heads,
    recent,
    groupCommit: new GroupCommit(store, clock, heads, recent),
    requestValidator: new RequestValidator(),
    rateLimiter: new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst, undefined, {
      addressPerSecond: config.rateLimitPerAddressPerSecond,
      addressBurst: config.rateLimitPerAddressBurst,
      bytesPerToken: config.rateLimitBytesPerToken,
    }),
    // An eighth per workspace: with the default 64 MiB, a tenant reads at most 4 pages at once
    // (each reserves ~2 MiB while read), so it holds at most 4 of Postgres's 10 pooled connections.
    memory: new MemoryBudget(config.memoryBudgetMb * MB, (config.memoryBudgetMb * MB) / 8, ADMISSION_WAIT_MS),
    webhookPolicy: { allowInsecure: config.webhooksAllowInsecure },
    webhookRedeliverMaxPending: config.webhookRedeliverMaxPending,
  };
}
