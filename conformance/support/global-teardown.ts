import { revokeMadeKeys } from './admin-keys.ts';

/** After the checks, passed, failed or interrupted: every key the kit made is revoked (revokeMadeKeys). */
export default async function globalTeardown(): Promise<void> {
  await revokeMadeKeys();
}
