// Dates and numbers in French whatever the browser's language, in the viewer's time zone, named.

const TIME_ZONE = (() => {
  try {
    return new Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
})();

const timeFormat = new Intl.DateTimeFormat('fr-FR', {
  timeZone: TIME_ZONE,
  day: 'numeric',
  month: 'short',
  year: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
});

export const countFormat = new Intl.NumberFormat('fr-FR');

/** An RFC 3339 time as the viewer reads it; a value that is not a date, as it is. */
export function formatTime(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? String(iso) : timeFormat.format(t);
}

/** `n` and its noun, singular or plural (French: 0 and 1 take the singular). */
export const plural = (n: number, one: string, many: string) => `${countFormat.format(n)} ${n > 1 ? many : one}`;
