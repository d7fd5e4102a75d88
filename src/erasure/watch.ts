import type { Logger } from '../base/log.ts';
import type { ErasureStore } from '../store/port.ts';

/**
 * How an instance learns that another rewrote a workspace's events (an erasure's batch, run by
 * whichever instance holds its lease): it asks for the erasures whose progress moved since it last
 * looked, every `intervalMs`, and tells `rewrote` of each workspace (FeedReader.forget, and the
 * store's read-ahead). So a page another instance erased is never served from a cache for longer
 * than about `intervalMs`.
 */
export function watchErasures(
  store: ErasureStore,
  rewrote: (workspaceId: string) => void,
  options: { intervalMs?: number; now?: () => number; log?: Logger } = {},
): { stop(): void } {
  const intervalMs = options.intervalMs ?? 1000;
  const now = options.now ?? Date.now;
  // A batch's updated_at is its writer's clock: look back a little so that clocks a second apart still agree.
  let since = now() - 2000;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = async () => {
    const asked = now();
    try {
      const moved = await store.erasures.movedSince(since - 2000);
      for (const workspaceId of new Set(moved.map((m) => m.workspaceId))) {
        store.erasures.forgetReadAhead(workspaceId);
        rewrote(workspaceId);
      }
      since = asked;
    } catch {
      options.log?.debug('erasures: could not look for rewritten workspaces; trying again');
    }
    if (!stopped) {
      timer = setTimeout(() => void tick(), intervalMs);
      timer.unref();
    }
  };
  timer = setTimeout(() => void tick(), intervalMs);
  timer.unref();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
