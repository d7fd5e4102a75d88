/** What LiveCalls needs of a call (Call). */
export interface LiveCall {
  readonly principal: { keyId: string };
  stillValid(): Promise<boolean>;
  revoke(): void;
}

/**
 * The calls that live on (held polls, event streams), by key, so that a revocation reaches them at
 * once rather than at their next page: when a key may have changed (revoked through this process,
 * announced on the change channel, or, on SQLite, any write by another process), its calls look
 * it up again (one lookup per key, whatever its number of calls) and end, answered unauthorized,
 * once it is revoked. A change heard while a key is being looked up has it looked up again: the
 * revocation's own notice comes after its commit, so the last lookup sees it.
 */
export class LiveCalls {
  readonly #byKey = new Map<string, Set<LiveCall>>();
  readonly #checking = new Map<string, { again: boolean }>();

  /** Watches the call until the returned function is called (its end). */
  add(call: LiveCall): () => void {
    const keyId = call.principal.keyId;
    let calls = this.#byKey.get(keyId);
    if (!calls) this.#byKey.set(keyId, (calls = new Set()));
    calls.add(call);
    return () => {
      calls.delete(call);
      if (calls.size === 0 && this.#byKey.get(keyId) === calls) this.#byKey.delete(keyId);
    };
  }

  /** Calls watched now (tests, metrics). */
  get size(): number {
    let size = 0;
    for (const calls of this.#byKey.values()) size += calls.size;
    return size;
  }

  /** The key may have changed: its calls check it again. */
  keyChanged(keyId: string): void {
    if (!this.#byKey.has(keyId)) return;
    const checking = this.#checking.get(keyId);
    if (checking) {
      checking.again = true;
      return;
    }
    const state = { again: false };
    this.#checking.set(keyId, state);
    void this.#check(keyId, state).finally(() => this.#checking.delete(keyId));
  }

  /** Any key may have changed (SQLite: another process wrote to the file): every watched key is checked again. */
  anyKeyChanged(): void {
    for (const keyId of [...this.#byKey.keys()]) this.keyChanged(keyId);
  }

  async #check(keyId: string, state: { again: boolean }): Promise<void> {
    do {
      state.again = false;
      const calls = this.#byKey.get(keyId);
      const first = calls?.values().next().value;
      if (!first) return;
      // A failed lookup (the database) proves nothing: the calls check again at their next page or wake.
      const valid = await first.stillValid().catch(() => true);
      if (!valid) for (const call of [...(this.#byKey.get(keyId) ?? [])]) call.revoke();
    } while (state.again);
  }
}
