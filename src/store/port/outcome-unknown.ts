/**
 * What a failed write tells about its outcome. A Postgres statement sent outside a transaction
 * commits by itself once it completes: when the answer is lost (the connection dropped, or the
 * client's query timeout gave up on it), the commit may have happened or not, and only a look at
 * the database afterwards can tell. A failure may be reported as "not stored" only when it proves
 * the statement rolled back (each kind's `errors.notStoredBecause`, asked through notStoredBecause).
 */

/** The write may or may not have committed; `cause` is what the driver reported. */
export class OutcomeUnknown extends Error {
  constructor(override readonly cause: unknown) {
    // The driver's own words, without the statement's text that knex puts before them.
    super(
      `the outcome of the write is unknown: ${String((cause as Error | undefined)?.message ?? cause)
        .split(' - ')
        .at(-1)}`,
    );
    this.name = 'OutcomeUnknown';
  }
}
