/**
 * Round trips on a change channel, shared by the requests that wait for one. A request takes a
 * `ticket` when it arrives; `heardAllBefore(ticket)` is true once a round trip sent after that is
 * back: the channel delivers every change committed before a round trip is sent ahead of its
 * answer (listenForChanges), so by then every change committed before the request arrived
 * has been heard. One round trip is out at a time, and the next serves every request that arrived
 * meanwhile: it wakes no backend but the listener's, however many requests wait.
 */
export class RoundTrips {
  #roundTrip: (() => Promise<void>) | undefined;
  /** Round trips sent so far, and the last one back in order: see `ticket`. */
  #sent = 0;
  #back = 0;
  #inFlight: { n: number; done: Promise<boolean> } | undefined;
  #next: { done: Promise<boolean>; settle: (ok: boolean) => void } | undefined;

  /** The channel's round trip from now on (undefined: this channel needs none, SQLite). */
  use(roundTrip: (() => Promise<void>) | undefined): void {
    this.#roundTrip = roundTrip;
  }

  /** Whether the channel offers round trips at all (Postgres); without one, what was heard is already current. */
  get offered(): boolean {
    return this.#roundTrip !== undefined;
  }

  /** Taken when a request arrives: `heardAllBefore` then counts every change committed before it. */
  ticket(): number {
    return this.#sent;
  }

  /** True once a round trip sent after `ticket` is back; false if it failed. */
  heardAllBefore(ticket: number): Promise<boolean> | boolean {
    if (this.#back > ticket) return true;
    if (this.#inFlight && this.#inFlight.n > ticket) return this.#inFlight.done;
    if (!this.#next) {
      let settle!: (ok: boolean) => void;
      this.#next = { done: new Promise<boolean>((resolve) => (settle = resolve)), settle };
      // Sent after this turn of the event loop, so that every request arriving in it shares it.
      if (!this.#inFlight) setImmediate(() => this.#send());
    }
    return this.#next.done;
  }

  #send(): void {
    const waiting = this.#next;
    if (!waiting || this.#inFlight) return;
    this.#next = undefined;
    const n = ++this.#sent;
    this.#inFlight = { n, done: waiting.done };
    const roundTrip = this.#roundTrip;
    const sent = roundTrip
      ? Promise.resolve()
          .then(roundTrip)
          .then(
            () => true,
            () => false,
          )
      : Promise.resolve(false);
    void sent.then((ok) => {
      this.#inFlight = undefined;
      if (ok) this.#back = n;
      waiting.settle(ok);
      this.#send(); // those who arrived meanwhile
    });
  }
}
