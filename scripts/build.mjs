/**
 * npm run build: compiles src/ and generated/ to plain JavaScript in dist/ (same tree), so the
 * service runs without a TypeScript loader: tsx's loader thread costs ~50 MB of RSS and the
 * start-up compile. bench/ too: the benchmark starts a dozen load processes per database, each of
 * which would spend ~1 s starting tsx (bench/processes.ts). One file in, one file out (esbuild,
 * ~0.1 s); relative `.ts` imports become `.js`, packages stay imports. bin/event-feed.js runs dist/
 * only while it is newer than every source file (see bin/fresh-build.js), else the sources through
 * tsx. The web view (src/http/view/, TypeScript for the browser) is not compiled file by file: it is
 * bundled into the one script the service serves (dist/view/view.js, bundleView).
 *
 * `--types` (npm run build:package, run by `prepare`, so by `npm pack`, `npm publish`, an install
 * from git and `npm install` in a clone) also writes the library's declarations next to its
 * JavaScript (dist/src/library.d.ts and what it imports: tsconfig.types.json), which package.json's
 * `exports` points to. Not by default: tsc takes seconds, and the service, the tests and the
 * benchmark do not need them.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { build } from 'esbuild';
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'dist');

/** The web view's sources: a browser program, bundled on its own below, not compiled for Node. */
const VIEW_SOURCES = join('src', 'http', 'view') + sep;

const sources = (dir) =>
  readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
    .filter((path) => !path.startsWith(VIEW_SOURCES));

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
        b.onResolve({ filter: /^\.\.?\// }, (args) =>
          args.kind === 'entry-point' ? undefined : { path: args.path.replace(/\.ts$/, '.js'), external: true },
        );
      },
    },
  ],
  logLevel: 'warning',
});
// The web view's TypeScript (src/http/view/) bundled into the one script the service serves at
// /view.js (dist/view/view.js), by the function the service itself uses when it runs from its
// sources: the compiled src/http/view-bundle.ts, just written.
const { bundleView, VIEW_BUNDLE } = await import(pathToFileURL(join(out, 'src', 'http', 'view-bundle.js')).href);
mkdirSync(dirname(VIEW_BUNDLE), { recursive: true });
writeFileSync(VIEW_BUNDLE, await bundleView());
if (process.argv.includes('--types')) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.types.json')], { stdio: 'inherit' });
}
// The conformance kit's package, which the service serves at /conformance/event-feed-conformance.tgz:
// QA installs the kit of the deployment's own version from the deployment, without a clone (~1 s).
packConformanceKit(join(out, 'kit'));
// The typed client's package (client/, @event-feed/client), served at /client/event-feed-client.tgz:
// `npm install <deployment>/client/event-feed-client.tgz` gives the client of this contract (~4 s).
packPackage('client', join(out, 'client'), 'event-feed-client.tgz');
// Written last: its time says when this build was complete.
writeFileSync(join(out, 'BUILT'), `${new Date().toISOString()}\n`);

function packConformanceKit(dir) {
  packPackage('conformance', dir, 'event-feed-conformance.tgz');
}

/** `npm pack` of a folder's package (its prepack builds it) into `dir`, under a name that does not change with its version. */
function packPackage(folder, dir, name) {
  mkdirSync(dir, { recursive: true });
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  execFileSync(npm, ['pack', '--silent', '--pack-destination', dir], { cwd: join(root, folder), stdio: ['ignore', 'ignore', 'inherit'] });
  // One name whatever the version: the address the READMEs give does not change with it.
  const [packed] = readdirSync(dir).filter((file) => file.endsWith('.tgz'));
  renameSync(join(dir, packed), join(dir, name));
}
