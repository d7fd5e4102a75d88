import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { safeErrorFields } from '../log.ts';
import type { Db } from '../store/db.ts';
import { nextDelayMs } from './retry-schedule.ts';
import type { WebhookSender } from './send.ts';
import { dueDeliveries, leaseEndpoints, recordAttempt, releaseLease, renewLease, type EndpointRow } from './store.ts';

export interface DispatcherOptions {
  intervalMs: number;
  /** How long an instance may hold an endpoint without renewing: well above one attempt's timeout. */
  leaseMs: number;
  endpointsPerTick: number;
  deliveriesPerEndpoint: number;
}

/**
 * Drains the outbox: every tick, lease endpoints with due deliveries and send each one's
 * deliveries in emission order, one at a time, so a healthy endpoint receives events in the
 * order they were emitted. An attempt is recorded only after it ends: a crash in between leaves
 * the delivery due, and it is sent again once the lease runs out (at least once, never lost).
 */
export class WebhookDispatcher {
  readonly #owner = `disp_${randomBytes(6).toString('hex')}`;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;

  constructor(
    readonly db: Db,
    readonly sender: WebhookSender,
    readonly clock: Clock,
    readonly log: Logger,
    readonly options: DispatcherOptions,
  ) {}

  start(): void {
    this.#timer = setInterval(() => void this.tick(), this.options.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
    await this.sender.close();
  }

  /** One pass; resolves to the number of attempts made. Overlapping calls share the pass in flight. */
  tick(): Promise<number> {
    this.#running ??= this.#pass()
      .catch((err) => {
        this.log.error(safeErrorFields(err), 'webhooks: dispatch pass failed; retrying at the next tick');
        return 0;
      })
      .finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #pass(): Promise<number> {
    const now = this.clock.now().getTime();
    const endpoints = await leaseEndpoints(this.db, this.#owner, now, this.options.leaseMs, this.options.endpointsPerTick);
    const counts = await Promise.all(endpoints.map((endpoint) => this.#drain(endpoint)));
    return counts.reduce((a, b) => a + b, 0);
  }

  async #drain(endpoint: EndpointRow): Promise<number> {
    let attempts = 0;
    try {
      const due = await dueDeliveries(this.db, endpoint.id, this.clock.now().getTime(), this.options.deliveriesPerEndpoint);
      for (const delivery of due) {
        const startedAt = this.clock.now().getTime();
        if (!(await renewLease(this.db, endpoint.id, this.#owner, startedAt + this.options.leaseMs))) return attempts;
        if (delivery.envelope === null) {
          await recordAttempt(this.db, { delivery, startedAt, status: null, latencyMs: 0, error: 'the event is past retention', outcome: 'failed', nextAttemptAt: null });
          continue;
        }
        const result = await this.sender.send({ url: endpoint.url, secret: endpoint.secret, eventId: delivery.event_id, body: delivery.envelope }, Math.floor(startedAt / 1000));
        attempts++;
        const ended = this.clock.now().getTime();
        if (result.error === null) {
          await recordAttempt(this.db, { delivery, startedAt, ...result, outcome: 'delivered', nextAttemptAt: null });
          continue;
        }
        if (result.status === 410) {
          await recordAttempt(this.db, { delivery, startedAt, ...result, outcome: 'disabled', nextAttemptAt: null });
          return attempts;
        }
        const honoured = result.status === 429 || result.status === 503 ? result.retryAfter : undefined;
        const delay = nextDelayMs(delivery.attempts + 1, honoured, ended);
        await recordAttempt(this.db, {
          delivery,
          startedAt,
          ...result,
          outcome: delay === undefined ? 'failed' : 'retry',
          nextAttemptAt: delay === undefined ? null : ended + delay,
        });
        // Later events wait for the next pass rather than overtake this one right away.
        return attempts;
      }
      return attempts;
    } finally {
      await releaseLease(this.db, endpoint.id, this.#owner).catch(() => {});
    }
  }
}
