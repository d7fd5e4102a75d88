import { test as base } from '@playwright/test';
import { pacedContext } from './rate-limits.ts';

export { expect } from '@playwright/test';

/**
 * The kit's `test`: its `request` fixture paces every request by the deployment's rate limits, and
 * a check whose wait bound is spent is reported as skipped with the reason, never as failed or passed.
 */
export const test = base.extend({
  request: async ({ request }, use) => {
    await use(pacedContext(request, (error) => base.info().skip(true, error.message) as never));
  },
});
