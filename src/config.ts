/** Everything the service reads from its environment, checked once at start. */
export interface Config {
  host: string;
  port: number;
  databaseUrl: string;
  /** Cursor HMAC secret; when absent, one is generated once and shared through the database. */
  cursorSecret: string | undefined;
  logLevel: string;
}

export const DEFAULT_DATABASE_URL = 'sqlite:data/event-feed.sqlite';

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`PORT must be an integer between 0 and 65535 (got "${env.PORT}")`);
  }
  const secret = env.EVENT_FEED_SECRET || undefined;
  if (secret !== undefined && secret.length < 32) {
    // Never echo the value itself: it is a secret even when it is a bad one.
    throw new ConfigError('EVENT_FEED_SECRET must be at least 32 characters long');
  }
  return {
    host: env.HOST || '127.0.0.1',
    port,
    databaseUrl: env.DATABASE_URL || DEFAULT_DATABASE_URL,
    cursorSecret: secret,
    logLevel: env.LOG_LEVEL || 'info',
  };
}
