import { createHash } from 'node:crypto';

/** A bad argument or configuration: the command prints its message (and the usage) and exits with 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export interface FeedConfig {
  /** EVENT_FEED_URL: the deployment's address, as the client takes it. */
  baseUrl: string;
  /** EVENT_FEED_KEY: never printed, never stored. */
  apiKey: string;
  /** What names the key in the state file and on the terminal instead of the key itself. */
  keyId: string;
}

/** An http(s) address, or a UsageError naming what it was for. */
export function httpUrl(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`${what} is required`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${what} is not a URL: ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`${what} must be an http:// or https:// address, got ${value}`);
  return url.href;
}

/**
 * The key's id: a key is `efk_<id>_<secret>` (the contract's CreateKeyResponse pattern) and its id
 * `key_<id>` (KeyId), which is not secret. A key of another form is named by a short hash instead.
 */
export function keyIdOf(key: string): string {
  const id = /^efk_([0-9A-HJKMNP-TV-Z]{26})_/.exec(key)?.[1];
  return id ? `key_${id}` : `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
}

/** The service and the key, from the environment, as the client is configured (client/README.md). */
export function feedConfig(env: NodeJS.ProcessEnv = process.env): FeedConfig {
  const baseUrl = httpUrl(env.EVENT_FEED_URL, "EVENT_FEED_URL (the service's address, e.g. http://127.0.0.1:3000)").replace(/\/+$/, '');
  const apiKey = env.EVENT_FEED_KEY?.trim();
  if (!apiKey) throw new UsageError('EVENT_FEED_KEY is required: an API key with the read permission (efk_…)');
  return { baseUrl, apiKey, keyId: keyIdOf(apiKey) };
}
