#!/usr/bin/env node
/**
 * event-feed-client: the client package's command (its `bin`), for webhook receivers on one's own
 * machine. `listen` forwards the feed to a local receiver as the service's webhooks would;
 * `check-receiver` grades a receiver against what Standard Webhooks asks of it.
 * Exit status: 0 success, 1 failure, 2 bad arguments or configuration.
 */
import { parseArgs } from 'node:util';
import { runCheckReceiver } from './check-receiver.js';
import { feedConfig, httpUrl, UsageError } from './config.js';
import { isSigningSecret } from './delivery.js';
import { listen, type Stopper } from './listen.js';
import { DEFAULT_STATE_FILE } from './listen-state.js';
import { colourOn, painter } from './terminal.js';

const DEFAULT_TIMEOUT_SECONDS = 10;

const HELP = `Usage: event-feed-client <command> [options]

  listen --forward-to URL [--secret whsec_…] [--state FILE] [--from now|start|CURSOR] [--timeout SECONDS]
      Follows the feed of EVENT_FEED_URL, read with the key EVENT_FEED_KEY, and POSTs each event to
      URL as the service's webhooks would (same body and headers, Standard Webhooks signature), in
      order: the next event once the previous one was acknowledged (2xx); a failure is retried in
      place. The position is saved after each acknowledged delivery in FILE (default
      ${DEFAULT_STATE_FILE} in this folder), so a restart resumes where it stopped.
      --secret    the receiver's signing secret (default: one made on the first run, kept in FILE, printed)
      --from      now: events emitted from now on; start: the oldest event kept; or a cursor
                  (default: the saved position, else now)
      --timeout   seconds a delivery may wait for its answer (default ${DEFAULT_TIMEOUT_SECONDS})
      Ctrl-C stops it cleanly and says where the next run resumes.

  check-receiver --url URL --secret whsec_… [--json] [--timeout SECONDS]
      Sends a battery of test deliveries to URL and grades the answers, one verdict per rule
      with a hint on how to fix it: valid deliveries of each event type, forged ones, stale
      timestamps, a duplicate, an unknown event type, a rotation's two signatures, a large body.
      --json      print the report as JSON
      --timeout   seconds each delivery may wait for its answer (default ${DEFAULT_TIMEOUT_SECONDS})
      Exit status 0 only when every rule passed.

Exit status: 0 success, 1 failure, 2 bad arguments or configuration.`;

function timeoutMs(value: string | undefined): number {
  if (value === undefined) return DEFAULT_TIMEOUT_SECONDS * 1000;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 300)
    throw new UsageError(`--timeout is a number of seconds, more than 0 and at most 300 (got ${value})`);
  return Math.round(seconds * 1000);
}

function secretOption(value: string | undefined, required: boolean): string | undefined {
  if (value === undefined) {
    if (required) throw new UsageError("--secret is required: the receiver's signing secret (whsec_…)");
    return undefined;
  }
  if (!isSigningSecret(value)) throw new UsageError('--secret is not a signing secret of the form whsec_<base64>');
  return value;
}

/** parseArgs' own errors (an unknown option, a missing value) are usage errors. */
function usage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

async function runListen(args: string[]): Promise<number> {
  const { values } = usage(() =>
    parseArgs({
      args,
      options: {
        'forward-to': { type: 'string' },
        secret: { type: 'string' },
        state: { type: 'string' },
        from: { type: 'string' },
        timeout: { type: 'string' },
        ...HELP_OPTION,
      },
      strict: true,
      allowPositionals: false,
    }),
  );
  if (values.help) return help();
  const forwardTo = httpUrl(values['forward-to'], "--forward-to (the receiver's address, e.g. http://127.0.0.1:4000/webhooks)");
  const secret = secretOption(values.secret, false);
  const from = values.from;
  // A cursor is opaque (the contract: a string of 1 to 512 characters); the feed says if it refuses one.
  if (from !== undefined && (from.length === 0 || from.length > 512))
    throw new UsageError('--from is now, start, or a cursor (a next_cursor of the feed)');
  const stateFile = values.state ?? DEFAULT_STATE_FILE;
  if (!stateFile) throw new UsageError('--state needs a file name');
  const timeout = timeoutMs(values.timeout);
  const config = feedConfig();

  // Ctrl-C (SIGINT) or SIGTERM: once stops cleanly, twice at once. A signal that comes before the
  // run can stop is kept for it.
  let stopper: Stopper | undefined;
  let pending = 0;
  const onSignal = () => (stopper ? stopper.stop() : pending++);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const paint = painter(colourOn(process.stdout));
  try {
    return await listen(
      config,
      { forwardTo, secret, stateFile, from, timeoutMs: timeout },
      { line: (text) => console.log(text), say: (text) => console.error(text), paint },
      (s) => {
        stopper = s;
        for (; pending > 0; pending--) s.stop();
      },
    );
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function runCheck(args: string[]): Promise<number> {
  const { values } = usage(() =>
    parseArgs({
      args,
      options: {
        url: { type: 'string' },
        secret: { type: 'string' },
        json: { type: 'boolean' },
        timeout: { type: 'string' },
        ...HELP_OPTION,
      },
      strict: true,
      allowPositionals: false,
    }),
  );
  if (values.help) return help();
  const url = httpUrl(values.url, "--url (the receiver's address)");
  const secret = secretOption(values.secret, true)!;
  const json = values.json === true;
  return runCheckReceiver(
    { url, secret, timeoutMs: timeoutMs(values.timeout), json },
    (text) => console.log(text),
    painter(!json && colourOn(process.stdout)),
  );
}

function help(): number {
  console.log(HELP);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === 'listen') return await runListen(rest);
    if (command === 'check-receiver') return await runCheck(rest);
    if (command === '--help' || command === '-h' || command === 'help') return help();
    if (command === undefined) throw new UsageError('a command is needed: listen or check-receiver');
    throw new UsageError(`unknown command: ${command}`);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`event-feed-client: ${error.message}\n(event-feed-client --help for the usage)`);
    return 2;
  }
}

const code = await main(process.argv.slice(2));
// Everything written first: stdout to a pipe is asynchronous on macOS, and exit() would cut it short.
await new Promise((resolve) => process.stdout.write('', resolve));
await new Promise((resolve) => process.stderr.write('', resolve));
// Then at once: an idle keep-alive socket of the feed's client must not keep a stopped run alive.
process.exit(code);
