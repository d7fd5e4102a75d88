import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, packageFile } from '../base/paths.ts';

/** The web view's sources: a browser program in TypeScript, type-checked by its own tsconfig. */
const VIEW_SOURCES = packageFile('src/http/view');
/** Where `npm run build` writes the view's bundle (the build script calls bundleView). */
export const VIEW_BUNDLE = packageFile('dist/view/view.js');
/** Says in the served script where it comes from (and lets a test see it is the bundle of the sources). */
export const VIEW_BUNDLE_BANNER =
  '// « Flux des événements »: bundled by esbuild from the TypeScript of src/http/view/ (entry main.ts; see src/http/view-bundle.ts).';

/**
 * The view's sources bundled into one browser module: esbuild (a dependency of the service), in
 * memory, in about 0.1 s. Its imports of the contract's types are erased; the event types' labels
 * stay an import of /event-labels.js, served on their own from generated/ (viewRouter).
 */
export async function bundleView(): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [join(VIEW_SOURCES, 'main.ts')],
    tsconfig: join(VIEW_SOURCES, 'tsconfig.json'),
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    charset: 'utf8',
    external: ['/event-labels.js'],
    banner: { js: VIEW_BUNDLE_BANNER },
    logLevel: 'silent',
  });
  const output = result.outputFiles?.[0];
  if (!output) throw new Error('esbuild wrote no bundle of the web view');
  return output.text;
}

/** The script served at /view.js, and since when it is what it is (its Last-Modified). */
export interface ViewScript {
  text: string;
  modified: Date;
}

/**
 * Compiled (dist/, `npm run build`): the bundle the build wrote next to it. From the sources
 * (tsx: the tests, a clone never built, sources newer than the build: bin/event-feed.js), the
 * sources bundled now, so the view is never older than the code serving it.
 */
const runsCompiled = fileURLToPath(import.meta.url).endsWith('.js');

let script: Promise<ViewScript> | undefined;

/** The view's script, made once per process (again after a failure). */
export function viewScript(): Promise<ViewScript> {
  script ??= (runsCompiled ? readBuiltBundle() : bundleView().then((text) => ({ text, modified: new Date() }))).catch((err: unknown) => {
    script = undefined;
    throw err;
  });
  return script;
}

async function readBuiltBundle(): Promise<ViewScript> {
  const [text, { mtime }] = await Promise.all([readFile(VIEW_BUNDLE, 'utf8'), stat(VIEW_BUNDLE)]);
  return { text, modified: mtime };
}
