/**
 * npm run build: compiles src/ and generated/ to plain JavaScript in dist/ (same tree), so the
 * service runs without a TypeScript loader: tsx's loader thread costs ~50 MB of RSS and the
 * start-up compile. bench/ too: the benchmark starts a dozen load processes per database, each of
 * which would spend ~1 s starting tsx (bench/processes.ts). One file in, one file out (esbuild,
 * ~0.1 s); relative `.ts` imports become `.js`, packages stay imports. bin/event-feed.js runs dist/
 * only while it is newer than every source file (see bin/fresh-build.js), else the sources through
 * tsx.
 */
import { build } from 'esbuild';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'dist');

const sources = (dir) =>
  readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));

rmSync(out, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: [...sources('src'), ...sources('generated'), ...sources('bench')],
  outdir: out,
  outbase: '.',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Each file is its own entry: its relative imports stay imports (of the compiled .js), packages too.
  bundle: true,
  packages: 'external',
  plugins: [
    {
      name: 'relative-imports-stay-imports',
      setup(b) {
        b.onResolve({ filter: /^\.\.?\// }, (args) => (args.kind === 'entry-point' ? undefined : { path: args.path.replace(/\.ts$/, '.js'), external: true }));
      },
    },
  ],
  logLevel: 'warning',
});
// Written last: its time says when this build was complete.
writeFileSync(join(out, 'BUILT'), `${new Date().toISOString()}\n`);
