#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=2 --max-old-space-size=128
// Heap bounds for a small, steady service. --max-semi-space-size=2: a young generation of 2 × 2 MB
// instead of up to 2 × 16 (the garbage is short-lived: a request, a page). --max-old-space-size=128:
// V8 collects before growing past it; the live heap under the benchmark's loads is ~40 MB. Together
// they keep the server under 150 MB of RSS while replaying and tailing (190 and 280 MB without),
// for about 10 % of replay throughput (bench/README.md). MALLOC_MMAP_THRESHOLD_ (glibc): buffers of
// 128 KiB and more (pages of events) are mapped apart and unmapped when freed; by default glibc
// raises that threshold after the first free and serves them from its heap, which fragments and
// kept ~10 MB more RSS after a replay (bench/README.md in git history, change 19). To choose otherwise, run
// `node <flags> bin/event-feed.js …`; `npm start` runs this file as is.
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
