/**
 * Compiles the client to plain JavaScript and declarations in dist/ (`npm pack` runs this; so does
 * the repository's `npm run build`, which packs the client for the service to serve). tsc, with
 * client/tsconfig.build.json: the declarations need the type-checker anyway, and one tool keeps the
 * JavaScript and its .d.ts in step. Needs typescript, openapi-fetch and standardwebhooks: the
 * repository's dev tree has them.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const out = join(here, 'dist');
rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.build.json')], { stdio: 'inherit' });
console.log(`built the client into ${relative(process.cwd(), out) || '.'}`);
