/**
 * The ids seen most recently, at most `size` of them: a Set to ask, a ring to forget the oldest.
 * The feed may serve an event again (at least once, e.g. across a failover); a repeat comes soon
 * after the first copy, so a bounded window catches it in constant memory.
 */
export class RecentIds {
  private readonly ids = new Set<string>();
  private readonly ring: Array<string | undefined>;
  private next = 0;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 0) throw new RangeError(`dedupeWindow must be a non-negative integer, got ${size}`);
    this.ring = new Array<string | undefined>(size);
  }

  /** True the first time an id is seen (within the window), false for a repeat. */
  add(id: string): boolean {
    if (this.ids.has(id)) return false;
    if (this.size === 0) return true;
    const forgotten = this.ring[this.next];
    if (forgotten !== undefined) this.ids.delete(forgotten);
    this.ring[this.next] = id;
    this.ids.add(id);
    this.next = (this.next + 1) % this.size;
    return true;
  }
}
