import { randomBytes } from 'node:crypto';
import type { Clock } from '../base/clock.ts';
import type { Logger } from '../base/log.ts';
import { safeErrorFields } from '../base/log.ts';
import type { WebhookStore } from '../store/port.ts';
import { logDisabledEndpoint, logFailedAttempt } from './attempt-log.ts';
import { nextDelayMs } from './retry-schedule.ts';
import { signingSecrets } from './rotation.ts';
import type { WebhookSender } from './send.ts';
import type { EndpointRow } from '../store/port.ts';
import { endFailed, startDeliverySpan, type Span } from '../tracing/spans.ts';

/** Why the service disables an endpoint (WebhookEndpoint.disabled_reason). */
export const DISABLED_GONE = 'the endpoint answered 410 Gone';
export const DISABLED_RETRIES_EXHAUSTED = 'retries exhausted: an event failed for about 3 days with no successful delivery meanwhile';

/*
 * Slots given back are filled together, by one lease statement, at most this often: its cost is
 * one probe per enabled endpoint, and on SQLite it runs on the event loop. The gap also grows with
 * the statement's own duration, so leasing takes at most about a fifth of the time however many
 * endpoints there are.
 */
const MIN_REFILL_GAP_MS = 20;
const REFILL_GAP_FACTOR = 5;

export interface DispatcherOptions {
  /** How often free slots are filled even when no slot has just been given back. */
  intervalMs: number;
  /** How long an instance may hold an endpoint without renewing: well above one attempt's timeout. */
  leaseMs: number;
  /** Endpoints sent to at once, each in a slot of its own. */
  slots: number;
  /** The most slots one workspace's endpoints may hold at once. */
  slotsPerWorkspace: number;
  /** How long one lease may go on starting attempts; then the endpoint gives its slot back. */
  leaseBudgetMs: number;
  /** The most deliveries one lease reads (and may send). */
  deliveriesPerLease: number;
}

/**
 * Drains the outbox through a fixed number of slots, one endpoint per slot. Each endpoint's due
 * deliveries are sent in emission order, one at a time, so a healthy endpoint receives events in
 * the order they were emitted. Slots are independent: a slow or hanging endpoint holds only its
 * own, and gives it back after its lease budget (or its first failure), and a slot given back is
 * filled again at once, not at the next interval. Which endpoint gets a free slot is decided
 * fairly across workspaces (Store.webhooks.leaseEndpoints).
 *
 * An attempt is recorded only after it ends: a crash in between leaves the delivery due, and it
 * is sent again once the lease runs out (at least once, never lost).
 */
export class WebhookDispatcher {
  readonly #owner = `disp_${randomBytes(6).toString('hex')}`;
  #timer: NodeJS.Timeout | undefined;
  /** The endpoints being sent to, by id: each one's drain. */
  readonly #slots = new Map<string, Promise<void>>();
  #filling: Promise<void> | undefined;
  #fillAgain = false;
  #lastFill = { at: -Infinity, ms: 0 };
  #attempts = 0;
  /** Per workspace, how many times its events were rewritten (rewrote): a drain stops sending what it read before one. */
  readonly #rewrites = new Map<string, number>();
  #stopped = false;

  constructor(
    readonly store: WebhookStore,
    readonly sender: WebhookSender,
    readonly clock: Clock,
    readonly log: Logger,
    readonly options: DispatcherOptions,
  ) {}

  start(): void {
    this.#timer = setInterval(() => void this.#fill(), this.options.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#stopped = true;
    await this.#idle();
    await this.sender.close();
  }

  /**
   * Fills the free slots now, then waits until every slot is free again (refills included);
   * resolves to the number of attempts made meanwhile. For tests and one-off runs: the server's
   * own dispatching never waits for a slot.
   */
  async tick(): Promise<number> {
    const before = this.#attempts;
    await this.#fill();
    await this.#idle();
    return this.#attempts - before;
  }

  async #idle(): Promise<void> {
    while (this.#filling || this.#slots.size > 0) await Promise.all([this.#filling, ...this.#slots.values()]);
  }

  /** Leases endpoints for the free slots and starts each one's drain. One fill at a time; asked for meanwhile, it runs once more. */
  #fill(): Promise<void> {
    if (this.#filling) {
      this.#fillAgain = true;
      return this.#filling;
    }
    this.#filling = (async () => {
      do {
        const wait = this.#lastFill.at + Math.max(MIN_REFILL_GAP_MS, REFILL_GAP_FACTOR * this.#lastFill.ms) - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        this.#fillAgain = false;
        const free = this.options.slots - this.#slots.size;
        if (free <= 0 || this.#stopped) return;
        const started = performance.now();
        const endpoints = await this.store.webhooks.leaseEndpoints({
          owner: this.#owner,
          now: this.clock.now().getTime(),
          leaseMs: this.options.leaseMs,
          max: free,
          perWorkspace: this.options.slotsPerWorkspace,
        });
        this.#lastFill = { at: started, ms: performance.now() - started };
        for (const endpoint of endpoints) this.#occupy(endpoint);
      } while (this.#fillAgain);
    })()
      .catch((err) => this.log.error(safeErrorFields(err), 'webhooks: leasing endpoints failed; retrying at the next interval'))
      .finally(() => (this.#filling = undefined));
    return this.#filling;
  }

  #occupy(endpoint: EndpointRow): void {
    const drain: Promise<void> = this.#drain(endpoint).finally(() => {
      if (this.#slots.get(endpoint.id) === drain) this.#slots.delete(endpoint.id);
      if (!this.#stopped) void this.#fill();
    });
    this.#slots.set(endpoint.id, drain);
  }

  /**
   * The workspace's stored events were rewritten (an erasure): deliveries read before are not
   * sent as read; their drain stops, and the next one reads them again, rewritten.
   */
  rewrote(workspaceId: string): void {
    this.#rewrites.set(workspaceId, (this.#rewrites.get(workspaceId) ?? 0) + 1);
  }

  /** Sends an endpoint's due deliveries in order until none is left, one fails, or the lease budget is spent. Never rejects. */
  async #drain(endpoint: EndpointRow): Promise<void> {
    const leased = performance.now();
    // After a failure, the endpoint's other deliveries wait an interval instead of following at once.
    let pauseUntil: number | null = null;
    try {
      const rewrites = this.#rewrites.get(endpoint.workspace_id);
      const due = await this.store.webhooks.dueDeliveries(endpoint.id, this.clock.now().getTime(), this.options.deliveriesPerLease);
      for (const delivery of due) {
        if (performance.now() - leased >= this.options.leaseBudgetMs) return;
        if (this.#rewrites.get(endpoint.workspace_id) !== rewrites) return;
        const startedAt = this.clock.now().getTime();
        if (!(await this.store.webhooks.renewLease(endpoint.id, this.#owner, startedAt + this.options.leaseMs))) return;
        if (delivery.envelope === null) {
          await this.store.webhooks.recordAttempt({
            delivery,
            startedAt,
            status: null,
            latencyMs: 0,
            error: 'the event is past retention',
            outcome: 'failed',
            nextAttemptAt: null,
          });
          logFailedAttempt(this.log, endpoint, delivery, { status: null, error: 'the event is past retention', errorCode: null }, null);
          continue;
        }
        // Traced, the attempt is a CLIENT span in the emit's trace (the outbox row's trace_context).
        const traced = startDeliverySpan(delivery.trace_context, {
          'event_feed.workspace_id': delivery.workspace_id,
          'event_feed.webhook.endpoint_id': endpoint.id,
          'event_feed.event_id': delivery.event_id,
          'event_feed.webhook.attempt': delivery.attempts + 1,
        });
        const result = await this.sender.send(
          {
            url: endpoint.url,
            secrets: signingSecrets(endpoint, startedAt),
            eventId: delivery.event_id,
            body: delivery.envelope,
            ...(traced ? { traceHeaders: traced.headers } : {}),
          },
          Math.floor(startedAt / 1000),
        );
        if (traced) endDeliverySpan(traced.span, result);
        this.#attempts++;
        const ended = this.clock.now().getTime();
        if (result.error === null) {
          await this.store.webhooks.recordAttempt({ delivery, startedAt, ...result, outcome: 'delivered', nextAttemptAt: null });
          continue;
        }
        if (result.status === 410) {
          const { disabled } = await this.store.webhooks.recordAttempt({
            delivery,
            startedAt,
            ...result,
            outcome: 'disabled',
            nextAttemptAt: null,
            disable: { reason: DISABLED_GONE },
          });
          logFailedAttempt(this.log, endpoint, delivery, result, null);
          if (disabled) logDisabledEndpoint(this.log, endpoint, DISABLED_GONE);
          return;
        }
        const honoured = result.status === 429 || result.status === 503 ? result.retryAfter : undefined;
        const delay = nextDelayMs(delivery.attempts + 1, honoured, ended);
        const nextAttemptAt = delay === undefined ? null : ended + delay;
        const { disabled } = await this.store.webhooks.recordAttempt({
          delivery,
          startedAt,
          ...result,
          outcome: delay === undefined ? 'failed' : 'retry',
          nextAttemptAt,
          // Out of retries: the endpoint goes off too, unless it delivered something since this
          // delivery was queued (then it is one event the receiver refuses, not a dead endpoint).
          ...(delay === undefined
            ? { disable: { reason: DISABLED_RETRIES_EXHAUSTED, unlessDeliveredSince: Number(delivery.created_at) } }
            : {}),
        });
        logFailedAttempt(this.log, endpoint, delivery, result, nextAttemptAt);
        if (disabled) logDisabledEndpoint(this.log, endpoint, DISABLED_RETRIES_EXHAUSTED);
        pauseUntil = ended + this.options.intervalMs;
        return;
      }
    } catch (err) {
      this.log.error(safeErrorFields(err), 'webhooks: sending to an endpoint failed; it is taken up again later');
      pauseUntil = this.clock.now().getTime() + this.options.intervalMs;
    } finally {
      await this.store.webhooks.releaseLease(endpoint.id, this.#owner, pauseUntil).catch(() => {});
    }
  }
}

/** Ends an attempt's span with its answer's status, or the fixed words of its failure's kind. */
function endDeliverySpan(span: Span, result: { status: number | null; error: string | null }): void {
  if (result.status !== null) span.setAttribute('http.response.status_code', result.status);
  if (result.error === null) span.end();
  else endFailed(span, result.status === null ? 'no answer' : String(result.status));
}
