/**
 * The contract's `date-time` values (emit_event's `occurred_at`, list_events' `occurred_after` and
 * `occurred_before`) as instants: one parser for every operation, so a value means the same thing
 * wherever it is given.
 */
import { invalidArgument } from '../base/errors.ts';

/** An instant: whole epoch milliseconds, plus the digits of the fraction beyond them (no trailing zeros). */
export interface Instant {
  ms: number;
  beyondMs: string;
}

// Exactly what the contract's `date-time` format (ajv-formats, full mode) accepts: `T`, `t` or one
// whitespace character between date and time; any number of fraction digits; `Z`, `z`, `±hh`,
// `±hhmm` or `±hh:mm`. Parsed by hand, not by `Date.parse`, whose handling of anything but the
// ISO form is the engine's guess (`+01` gives NaN, `2026-02-30 …` rolls over to March).
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt\s](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)$/;

/** A validated RFC 3339 date-time as an instant; invalid_argument (never a 500) for what no event time can be. */
export function parseInstant(field: string, text: string): Instant {
  const m = DATE_TIME.exec(text);
  const notValid = () => invalidArgument(`${field} must be a valid date-time`);
  if (!m) throw notValid();
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const fraction = m[7] ?? '';
  const offsetMinutes = m[8] === undefined ? 0 : (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10] ?? 0));
  if (second === 60) {
    throw invalidArgument(
      `${field} ${JSON.stringify(text)} is not a representable UTC date-time: it is a leap second, which no event time can be`,
    );
  }
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: the latter reads years 0-99 as 1900-1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number(fraction.slice(0, 3).padEnd(3, '0')));
  const rolledOver = date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day;
  if (rolledOver || hour > 23 || minute > 59 || Number(m[9] ?? 0) > 23 || Number(m[10] ?? 0) > 59) throw notValid();
  const ms = date.getTime() - offsetMinutes * 60_000;
  if (!Number.isSafeInteger(ms)) {
    throw invalidArgument(`${field} ${JSON.stringify(text)} is not a representable UTC date-time`);
  }
  return { ms, beyondMs: fraction.slice(3).replace(/0+$/, '') };
}

/** The instant rounded up to the millisecond. */
export const ceilMs = (instant: Instant) => instant.ms + (instant.beyondMs === '' ? 0 : 1);

export function compareInstants(a: Instant, b: Instant): number {
  if (a.ms !== b.ms) return a.ms - b.ms;
  const width = Math.max(a.beyondMs.length, b.beyondMs.length);
  const x = a.beyondMs.padEnd(width, '0');
  const y = b.beyondMs.padEnd(width, '0');
  return x < y ? -1 : x > y ? 1 : 0;
}

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the instants RFC 3339's four-digit years can write in UTC. */
const FIRST_MS = new Date(0).setUTCFullYear(0, 0, 1);
const LAST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * An event time as the envelope stores it: `occurred_at` in UTC with milliseconds and `Z`
 * (`2026-11-21T09:14:03.512Z`), the fraction beyond the millisecond dropped (truncated, not
 * rounded: an instant never moves into the next second, minute or year). An instant whose UTC
 * year is not 0000-9999 (only reachable through an offset at either end) is refused: RFC 3339
 * has no form for it, and `Date.toISOString` would write `-000001-…` or `+010000-…`.
 */
export function utcMillisecondsOf(field: string, text: string): { iso: string; ms: number } {
  const { ms } = parseInstant(field, text);
  if (ms < FIRST_MS || ms > LAST_MS) {
    throw invalidArgument(
      `${field} ${JSON.stringify(text)} is not a representable UTC date-time: in UTC it falls outside the years 0000-9999`,
    );
  }
  return { iso: new Date(ms).toISOString(), ms };
}
