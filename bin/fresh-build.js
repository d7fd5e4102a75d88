import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));

/** Whether dist/ (npm run build) holds every source as it is now: built after the last change to src/ or generated/. */
export function freshBuild(root = packageRoot) {
  let builtMs;
  try {
    builtMs = statSync(join(root, 'dist', 'BUILT')).mtimeMs;
  } catch {
    return false;
  }
  for (const dir of ['src', 'generated']) {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true, recursive: true })) {
      if (entry.name.endsWith('.ts') && statSync(join(entry.parentPath, entry.name)).mtimeMs > builtMs) return false;
    }
  }
  return true;
}
