import pino from 'pino';

/*
 * knex's own warnings ("Acquire connection error: <stack>", "Connection Error: …") go to console.log
 * by default: multi-line stack traces on stdout, among the JSON log lines and in the CLI's result.
 * They go to stderr instead, as one JSON line: the first line only (no stack, no SQL).
 */
export const driverLog = pino(
  { level: process.env.LOG_LEVEL || 'info', base: undefined, timestamp: pino.stdTimeFunctions.isoTime },
  pino.destination(2),
);
const driverWarning = (message: unknown) =>
  driverLog.warn(
    {
      detail: String(message)
        .split('\n')[0]!
        .replace(/^.* - /, '')
        .slice(0, 300),
    },
    'database driver warning',
  );
/** knex's `log` option. */
export const knexLog = { warn: driverWarning, error: driverWarning, deprecate: driverWarning, debug: () => {} };
