/**
 * Who must hear that a workspace's stored events were rewritten in place (an erasure's batch, by
 * this process's ErasureRunner or heard from another instance by watchErasures): the feed's
 * caches (FeedReader.forget) and the webhook dispatcher's deliveries read ahead of sending
 * (WebhookDispatcher.rewrote).
 */
export class Rewrites {
  readonly #listeners: Array<(workspaceId: string) => void> = [];

  listen(listener: (workspaceId: string) => void): void {
    this.#listeners.push(listener);
  }

  tell(workspaceId: string): void {
    for (const listener of this.#listeners) listener(workspaceId);
  }
}
