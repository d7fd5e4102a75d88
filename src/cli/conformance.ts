import { spawn } from 'node:child_process';
import { packageFile } from '../base/paths.ts';

/**
 * `event-feed conformance …`: the conformance kit's own command (conformance/bin), with the same
 * options, run from this checkout; resolves to its exit status (non-zero when a check failed).
 */
export function runConformanceKit(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [packageFile('conformance/bin/event-feed-conformance.js'), ...args], { stdio: 'inherit' });
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => child.kill(signal));
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}
