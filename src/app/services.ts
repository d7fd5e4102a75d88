import { ChangeWatch } from '../feed/change-watch.ts';
import type { Config } from './config.ts';
import { systemClock, type Clock } from '../base/clock.ts';
import { RequestValidator } from '../contract/request-validator.ts';
import { CursorCodec } from '../feed/cursor.ts';
import { ErasureKeys } from '../erasure/addresses.ts';
import { ErasureRunner } from '../erasure/runner.ts';
import { Rewrites } from '../erasure/rewrites.ts';
import { StreamTokens } from '../auth/stream-tokens.ts';
import { GroupCommit } from '../feed/group-commit.ts';
import { HeldReads } from '../feed/held-reads.ts';
import { LiveCalls } from '../auth/live-calls.ts';
import { FeedReader } from '../feed/reader.ts';
import { RecentEvents } from '../feed/recent-events.ts';
import { SealedPages } from '../feed/sealed-pages.ts';
import { MemoryBudget } from '../limits/memory-budget.ts';
import { RateLimiter } from '../limits/rate-limiter.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { CallServices } from '../calls/call-services.ts';
import type { Store } from '../store/port.ts';

/**
 * What the process holds, built once by createServices: the composition root. The calls' services
 * (CallServices: the operations' plus budgets, validator, held reads, live calls, metrics) and
 * what only the server uses. Imported by the server and the CLI alone: every edge and call
 * declares the few services it needs, which these satisfy.
 */
export interface AppServices extends CallServices {
  /** Set once the server starts shutting down: /readyz answers 503 from then on, so balancers stop sending. */
  lifecycle: { draining: boolean };
  /**
   * The origin clients reach this service at (PUBLIC_URL, or this process's own address), set by
   * the server once it listens: the OAuth issuer and MCP resource derive from it (issuerUrl, mcpResource).
   * Absent (a service that does not listen): OAuth access tokens are refused everywhere.
   */
  publicOrigin?: string;
}

const MB = 1024 * 1024;
/** How long a request waits for room in the memory budget before it is refused (429). */
const ADMISSION_WAIT_MS = 1000;

export async function createServices(
  store: Store,
  config: Pick<
    Config,
    | 'cursorSecret'
    | 'rateLimitPerSecond'
    | 'rateLimitBurst'
    | 'rateLimitWorkspacePerSecond'
    | 'rateLimitWorkspaceBurst'
    | 'rateLimitPerAddressPerSecond'
    | 'rateLimitPerAddressBurst'
    | 'rateLimitBytesPerToken'
    | 'webhooksAllowInsecure'
    | 'webhookTimeoutMs'
    | 'memoryBudgetMb'
    | 'pageCacheMb'
    | 'webhookRedeliverMaxPending'
    | 'heldReadsMax'
    | 'heldReadsPerKey'
    | 'heldReadsPerWorkspace'
    | 'streamStallMs'
    | 'erasureBatchSeqs'
    | 'erasurePauseMs'
    | 'erasureLeaseMs'
  >,
  clock: Clock = systemClock,
  metrics?: Metrics,
): Promise<AppServices> {
  const secret = config.cursorSecret ?? (await store.sharedCursorSecret());
  const changes = watchChanges(store);
  // Ages by the clock retention prunes by.
  const recent = new RecentEvents(() => clock.now().getTime());
  const feed = new FeedReader(store, changes.heads, recent, clock, new SealedPages(config.pageCacheMb * MB));
  const erasureKeys = new ErasureKeys(secret);
  const rewrites = new Rewrites();
  rewrites.listen((workspaceId) => feed.forget(workspaceId));
  return {
    calls: watchCalls(changes),
    store,
    cursors: new CursorCodec(secret),
    streamTokens: new StreamTokens(secret),
    clock,
    changes,
    feed,
    // Runs only when asked (erase_person kicks it) until the server starts it to resume what a restart left.
    erasures: {
      keys: erasureKeys,
      rewrites,
      runner: new ErasureRunner(store, erasureKeys, (workspaceId) => rewrites.tell(workspaceId), {
        now: () => clock.now().getTime(),
        batchSeqs: config.erasureBatchSeqs,
        pauseMs: config.erasurePauseMs,
        leaseMs: config.erasureLeaseMs,
        pollMs: Math.min(5000, config.erasureLeaseMs),
      }),
    },
    heldReads: holdReads(store, changes, config),
    groupCommit: new GroupCommit(store, clock, changes.heads, recent, metrics && ((statement) => metrics.committed(statement))),
    requestValidator: new RequestValidator(),
    rateLimiter: new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst, undefined, {
      workspacePerSecond: config.rateLimitWorkspacePerSecond,
      workspaceBurst: config.rateLimitWorkspaceBurst,
      addressPerSecond: config.rateLimitPerAddressPerSecond,
      addressBurst: config.rateLimitPerAddressBurst,
      bytesPerToken: config.rateLimitBytesPerToken,
    }),
    // An eighth per workspace: with the default 64 MiB, a tenant reads at most 4 pages at once
    // (each reserves ~2 MiB while read), so it holds at most 4 of Postgres's 10 pooled connections.
    memory: new MemoryBudget(config.memoryBudgetMb * MB, (config.memoryBudgetMb * MB) / 8, ADMISSION_WAIT_MS),
    webhookPolicy: { allowInsecure: config.webhooksAllowInsecure },
    webhookRedeliverMaxPending: config.webhookRedeliverMaxPending,
    webhookTimeoutMs: config.webhookTimeoutMs,
    ...(metrics ? { metrics } : {}),
    lifecycle: { draining: false },
  };
}

/**
 * Where held reads (long-polls, streams) learn that something happened: every commit heard (this
 * process's, and on Postgres every instance's through the channel), and on SQLite another
 * process's write, found by asking the file while reads wait.
 */
function holdReads(
  store: Store,
  changes: ChangeWatch,
  config: Pick<Config, 'heldReadsMax' | 'heldReadsPerKey' | 'heldReadsPerWorkspace' | 'streamStallMs'>,
): HeldReads {
  const limits = {
    max: config.heldReadsMax ?? 2048,
    perKey: config.heldReadsPerKey ?? 512,
    perWorkspace: config.heldReadsPerWorkspace ?? 512,
    stallMs: config.streamStallMs ?? 30_000,
  };
  const channel = store.listenForChanges !== undefined;
  const held = channel
    ? new HeldReads(limits, { channelDown: true })
    : new HeldReads(limits, { probe: () => changes.trust.check(), headsOf: (workspaceIds) => store.feedHeads(workspaceIds) });
  changes.heads.whenHeard((workspaceId, mailboxes) => held.moved(workspaceId, mailboxes));
  if (channel) {
    changes.trust.whenLost(() => held.channelLost());
    changes.trust.whenOpened(() => held.channelOpened());
  } else changes.trust.whenOthersWrote(() => held.othersWrote());
  return held;
}

/** The calls that live on, checked again whenever a key may have changed: revoked through this process or heard of, or (SQLite) another process wrote. */
function watchCalls(changes: ChangeWatch): LiveCalls {
  const calls = new LiveCalls();
  changes.keys.whenForgotten((keyId) => calls.keyChanged(keyId));
  changes.trust.whenOthersWrote(() => calls.anyKeyChanged());
  return calls;
}

/**
 * The change watch of a service on this store. With a change channel (Postgres): believes nothing
 * until the channel opens it (the server listens: Store.listenForChanges). Without (SQLite): believes what it kept while no
 * other process writes to the file.
 */
export function watchChanges(store: Store): ChangeWatch {
  return new ChangeWatch(store.othersWritesVersion ? { othersWrites: store.othersWritesVersion } : {});
}
