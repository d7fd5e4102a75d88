#!/usr/bin/env node
// Runs the compiled service (dist/, from `npm run build`) while it is up to date with the sources;
// otherwise the TypeScript sources themselves, through tsx. So a clone runs without a build step,
// an edited source is never shadowed by an older build, and a built service does without the
// TypeScript loader (~50 MB of memory and the compile at start-up).
import { freshBuild } from './fresh-build.js';

if (freshBuild()) {
  await import('../dist/src/cli/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
