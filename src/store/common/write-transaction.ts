const ATTEMPTS = 5;

/**
 * Runs `attempt` again (after a short random pause) while it fails with a transient conflict,
 * whose transaction rolled back whole (`retryable`: the database kind's `errors.retryable`), up to
 * ATTEMPTS times.
 */
export async function retryingTransient<T>(attempt: () => Promise<T>, retryable: (err: unknown) => boolean): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (n >= ATTEMPTS || !retryable(err)) throw err;
      await new Promise((done) => setTimeout(done, Math.random() * 10 * n));
    }
  }
}
