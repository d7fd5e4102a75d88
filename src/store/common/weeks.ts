/** Weeks as the events table is partitioned by on Postgres (EventPartitions), and as its migration cut the existing rows. */
export const DAY_MS = 86_400_000;
export const WEEK_MS = 7 * DAY_MS;
/** 1970-01-05T00:00:00Z, the first Monday of the epoch. */
export const FIRST_MONDAY_MS = 4 * DAY_MS;

/** The start of the week (Monday 00:00 UTC) holding `ms`. */
export const weekStart = (ms: number) => Math.floor((ms - FIRST_MONDAY_MS) / WEEK_MS) * WEEK_MS + FIRST_MONDAY_MS;
