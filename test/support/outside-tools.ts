import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * Tools this project did not write (client generators, default linters, the MCP conformance suite,
 * the Inspector, the `eventsource` package) and the Node 22 they need, pinned in
 * test/outside-tools/package.json and its lock, installed from the npm registry on first use (or by
 * CI's step before the suite). Nothing is installed on the machine: Node 22 comes from the
 * registry's `node` package into that folder's node_modules/.bin.
 */
export const OUTSIDE_TOOLS_DIR = fileURLToPath(new URL('../outside-tools/', import.meta.url));

const run = promisify(execFile);
const STAMP = join(OUTSIDE_TOOLS_DIR, 'node_modules', '.installed-from-lock');
const LOCK_DIR = join(OUTSIDE_TOOLS_DIR, '.installing');

/** Installs the pinned tools once (several test files may ask at once: one installs, the others wait). */
export async function outsideTools(): Promise<OutsideTools> {
  const lock = readFileSync(join(OUTSIDE_TOOLS_DIR, 'package-lock.json'), 'utf8');
  const installed = () => existsSync(STAMP) && readFileSync(STAMP, 'utf8') === lock;
  for (let tries = 0; !installed(); tries++) {
    if (tries > 600)
      throw new Error(`test/outside-tools: another process has been installing for 10 minutes (remove ${LOCK_DIR} if none is)`);
    try {
      mkdirSync(LOCK_DIR);
    } catch {
      await sleep(1000);
      continue;
    }
    try {
      if (!installed()) {
        // install, not ci: npm ci refuses the lock for an optional Windows-only package the registry here lacks (vite's).
        await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--loglevel=error'], {
          cwd: OUTSIDE_TOOLS_DIR,
          timeout: 600_000,
          maxBuffer: 64 * 1024 * 1024,
        });
        writeFileSync(STAMP, lock);
      }
    } finally {
      rmSync(LOCK_DIR, { recursive: true, force: true });
    }
  }
  return tools;
}

const bin = (name: string) => join(OUTSIDE_TOOLS_DIR, 'node_modules', '.bin', name);

/** Where each tool is once installed; run a tool's bin with `node22` (they need Node ≥ 22.18). */
export interface OutsideTools {
  /** The registry's Node 22 binary. */
  node22: string;
  bin(name: string): string;
  /** A folder holding the tools' node_modules (for module resolution of generated code's imports). */
  dir: string;
}

const tools: OutsideTools = { node22: bin('node'), bin, dir: OUTSIDE_TOOLS_DIR };
