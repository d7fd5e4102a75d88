import { provisionKeys } from './admin-keys.ts';

/**
 * Before the checks: with EVENT_FEED_ADMIN_KEY, the keys the run was not given are made
 * (provisionKeys); the checks' workers, started after this, inherit them in their environment.
 */
export default async function globalSetup(): Promise<void> {
  if (!process.env.EVENT_FEED_ADMIN_KEY) return;
  // Playwright's runner stops gracefully, running the global teardown that revokes the keys, on
  // SIGINT only: a SIGTERM (a CI job cancelled, `kill`) would end it at once and leave them.
  process.once('SIGTERM', () => process.kill(process.pid, 'SIGINT'));
  await provisionKeys();
}
