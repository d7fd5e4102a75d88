/**
 * `--against <ref>`: that ref checked out in a scratch worktree (`git worktree add --detach` under
 * the system's temporary folder), this checkout's node_modules hard-linked into it (`cp -al`), and
 * its own `npm run build`; removed again at exit or on Ctrl-C (a cleanup).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cleanups, log } from './config.ts';
import { ROOT } from './processes.ts';
import type { Base } from './run-database.ts';

const run = promisify(execFile);

async function git(...args: string[]): Promise<string> {
  return (await run('git', args, { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
}

export async function prepareBase(ref: string): Promise<Base> {
  const commit = await git('rev-parse', '--verify', `${ref}^{commit}`);
  const root = join(mkdtempSync(join(tmpdir(), 'event-feed-base-')), 'checkout');
  const remove = async () => {
    await git('worktree', 'remove', '--force', root).catch(() => {});
    rmSync(join(root, '..'), { recursive: true, force: true });
    await git('worktree', 'prune').catch(() => {});
  };
  cleanups.push(remove);
  log(`--against ${ref}: ${commit.slice(0, 12)} into a scratch worktree ${root}…`);
  await git('worktree', 'add', '--detach', root, commit);
  if (existsSync(join(ROOT, 'node_modules')) && !existsSync(join(root, 'node_modules')))
    await run('cp', ['-al', join(ROOT, 'node_modules'), join(root, 'node_modules')]);
  log(`--against ${ref}: npm run build in it…`);
  try {
    await run('npm', ['run', 'build'], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`the base's build failed: ${e.message}\n${(e.stderr ?? '').slice(-3000)}`);
  }
  return { ref, commit, root };
}
