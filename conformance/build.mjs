/**
 * Compiles the kit to plain JavaScript in dist/ for its package (`npm pack` runs this): Playwright
 * transpiles TypeScript test files, but not inside node_modules, where an installed kit lives.
 * The specs, the config and the reporter are entries; what they share (support/, Ajv) goes into
 * common chunks, so the run keeps one copy of the kit's state. Only @playwright/test stays a package.
 * Needs esbuild (the repository's dev tree has it).
 */
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const out = join(here, 'dist');
const specs = (dir) =>
  readdirSync(join(here, dir), { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.spec.ts'))
    .map((entry) => relative(here, join(entry.parentPath, entry.name)));

rmSync(out, { recursive: true, force: true });
await build({
  absWorkingDir: here,
  entryPoints: [
    'playwright.config.ts',
    'support/conformance-reporter.ts',
    'support/global-setup.ts',
    'support/global-teardown.ts',
    ...specs('api'),
    ...specs('view'),
  ],
  outdir: out,
  outbase: '.',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  bundle: true,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  external: ['@playwright/test', '@playwright/test/*'],
  // Ajv is CommonJS: give its bundled requires a `require` in these ES modules.
  banner: { js: "import { createRequire as __kitCreateRequire } from 'node:module'; const require = __kitCreateRequire(import.meta.url);" },
  logLevel: 'warning',
});
console.log(`built the kit into ${relative(process.cwd(), out) || '.'}`);
