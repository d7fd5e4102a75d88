/** What webhooks ask of storage (WebhookStore): endpoints, the outbox, deliveries and attempts. */
import type { WebhookAttempt } from '../../../generated/types.ts';

export interface EndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  /** JSON array of type patterns; empty: every type. */
  event_types: string;
  enabled: boolean;
  disabled_reason: string | null;
  /** When the service disabled it (disabled_reason says why); null otherwise. */
  disabled_at: number | null;
  secret: string;
  /** The secret a rotation replaced: deliveries carry its signature too until previous_secret_expires_at. */
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  /** Unused since migration 012 (test_webhook's cooldown is per workspace and URL). */
  last_tested_at: number | null;
  created_at: number;
  updated_at: number;
}

/** An endpoint's last attempts (at most `window`), and how many of them delivered. */
export interface AttemptHealth {
  attempts: number;
  delivered: number;
}

export interface LeaseRequest {
  owner: string;
  now: number;
  leaseMs: number;
  /** Free slots: the most endpoints to lease. */
  max: number;
  /** The most endpoints of one workspace this owner may hold at once. */
  perWorkspace: number;
}

export interface DueDelivery {
  id: number;
  endpoint_id: string;
  workspace_id: string;
  event_seq: number;
  event_id: string;
  attempts: number;
  /** When the delivery was queued (ms). */
  created_at: number;
  envelope: string | null;
  /** The emit's traceparent, when it was traced (migration 014). */
  trace_context: string | null;
}

export interface AttemptRecord {
  delivery: DueDelivery;
  startedAt: number;
  status: number | null;
  latencyMs: number;
  error: string | null;
  outcome: WebhookAttempt['outcome'];
  nextAttemptAt: number | null;
  /**
   * Disables the endpoint with this reason, in the attempt's transaction; with
   * `unlessDeliveredSince`, only if none of its attempts delivered since then (ms).
   */
  disable?: { reason: string; unlessDeliveredSince?: number };
}

export interface WebhookStore {
  webhooks: {
    findEndpoint(workspaceId: string, url: string): Promise<EndpointRow | undefined>;
    listEndpoints(workspaceId: string): Promise<EndpointRow[]>;
    /** Leases up to `max` endpoints with deliveries due and no live lease, fairly across workspaces. */
    leaseEndpoints(request: LeaseRequest): Promise<EndpointRow[]>;
    renewLease(endpointId: string, owner: string, until: number): Promise<boolean>;
    releaseLease(endpointId: string, owner: string, pauseUntil?: number | null): Promise<void>;
    dueDeliveries(endpointId: string, now: number, max: number): Promise<DueDelivery[]>;
    /** Records an attempt; `disabled` is true when it disabled an endpoint that was enabled (once, whichever instance). */
    recordAttempt(record: AttemptRecord): Promise<{ disabled: boolean }>;
    pendingCount(endpointId: string): Promise<number>;
    recentAttempts(endpointId: string, max?: number): Promise<WebhookAttempt[]>;
    /** The endpoint's last `window` attempts counted, by the (endpoint_id, id) index: bounded whatever its history. */
    attemptHealth(endpointId: string, window: number): Promise<AttemptHealth>;
    /**
     * Claims the test slot of a URL of the workspace at `now` unless it was claimed less than
     * `cooldownMs` ago, whichever endpoint row held the URL then (one conditional upsert: instances
     * agree); when refused, the ms left to wait.
     */
    claimTestSlot(
      workspaceId: string,
      url: string,
      now: number,
      cooldownMs: number,
    ): Promise<{ claimed: true } | { claimed: false; waitMs: number }>;
  };
}
