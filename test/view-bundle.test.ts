/**
 * The web view is TypeScript (src/http/view/, issue 33): what the service serves at /view.js is the
 * bundle of those modules (view-bundle.ts), not a script of its own, with the same headers as the
 * view's other files; the event types' labels stay an import of the served /event-labels.js. The
 * view's own tsconfig (the DOM's types, the contract's through the typed client's generated file)
 * type-checks every module: a type error planted in a copy of them is reported, a use of a field
 * the contract does not have too. (Served from dist/ by the compiled service: test/package.test.ts.)
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { VIEW_BUNDLE_BANNER } from '../src/http/view-bundle.ts';
import { sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const viewDir = join(root, 'src', 'http', 'view');
const modules = readdirSync(viewDir).filter((name) => name.endsWith('.ts'));
/** Modules of types only: erased from the bundle. */
const TYPES_ONLY = new Set(['api-types.ts']);

describe('the web view, bundled from its TypeScript', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
  });

  it('/view.js is the bundle of every module of src/http/view/, the labels still imported from /event-labels.js', async () => {
    const res = await fetch(`${server.url}/view.js`);
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.equal(res.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.ok(text.startsWith(VIEW_BUNDLE_BANNER), text.slice(0, 200));
    assert.ok(modules.includes('main.ts') && modules.length > 10, `the view's modules: ${modules.join(', ')}`);
    // esbuild names each module it bundles in a comment before its code.
    for (const name of modules.filter((module) => !TYPES_ONLY.has(module)))
      assert.ok(text.includes(`// src/http/view/${name}\n`), `${name} is in the bundle`);
    assert.match(text, /^import \{ EVENT_HEADINGS_FR \} from "\/event-labels\.js";$/m);
    assert.ok(!text.includes('Message reçu'), 'the labels are not bundled: /event-labels.js serves them');
    assert.doesNotMatch(text, /^\s*import type |client\/src\/generated/m, 'no TypeScript left, nothing of the client');
    // The page loads it as a module, from the same address.
    const page = await (await fetch(`${server.url}/`)).text();
    assert.match(page, /<script type="module" src="\/view\.js"><\/script>/);
  });

  it("is revalidated like the view's other files (no-cache), by its Last-Modified", async () => {
    const first = await fetch(`${server.url}/view.js`);
    await first.arrayBuffer();
    const modified = first.headers.get('last-modified');
    assert.ok(modified && !Number.isNaN(Date.parse(modified)), `Last-Modified: ${modified}`);
    // As a browser revalidates (fetch would add `Cache-Control: no-cache` to a conditional request of its own).
    const again = await fetch(`${server.url}/view.js`, { headers: { 'if-modified-since': modified, 'cache-control': 'max-age=0' } });
    assert.equal(again.status, 304);
    assert.equal(await again.text(), '');
  });

  it("the view's tsconfig type-checks every module: errors planted in a copy are reported, and only they", async () => {
    // What CI runs (npm run typecheck) checks the view's project too, not only the server's (which leaves it out).
    const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    assert.match(scripts.typecheck, /\btsc --noEmit -p src\/http\/view(?: |$)/, scripts.typecheck);
    // A copy laid out like the repository: the view's folder, and the generated files it reads types from.
    const work = mkdtempSync(join(tmpdir(), 'event-feed-view-'));
    try {
      const copy = join(work, 'src', 'http', 'view');
      mkdirSync(copy, { recursive: true });
      cpSync(viewDir, copy, { recursive: true });
      symlinkSync(join(root, 'generated'), join(work, 'generated'));
      mkdirSync(join(work, 'client', 'src'), { recursive: true });
      symlinkSync(join(root, 'client', 'src', 'generated'), join(work, 'client', 'src', 'generated'));
      const plant = (file: string, from: string, to: string) => {
        const text = readFileSync(join(copy, file), 'utf8');
        assert.ok(text.includes(from), `${file} holds ${from}`);
        writeFileSync(join(copy, file), text.replace(from, to));
      };
      // A DOM property given a number.
      plant('render-event.ts', 'time.dateTime = event.occurred_at;', 'time.dateTime = event.occurred_at.length;');
      // A field event_feed's answer does not have (the contract's types, through the client's).
      plant('walk-to-head.ts', 'payload.next_cursor === after', 'payload.nextCursor === after');

      const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
      const result = await run(process.execPath, [tsc, '--noEmit', '--pretty', 'false', '-p', copy], { cwd: work }).then(
        () => ({ output: '' }),
        (err: { stdout: string }) => ({ output: err.stdout }),
      );
      const errors = result.output.split('\n').filter((line) => /error TS\d+/.test(line));
      assert.equal(errors.length, 2, result.output);
      assert.match(
        errors.find((line) => line.includes('render-event.ts(')) ?? '',
        /error TS2322: Type 'number' is not assignable to type 'string'/,
        result.output,
      );
      assert.match(
        errors.find((line) => line.includes('walk-to-head.ts(')) ?? '',
        /error TS(2339|2551): Property 'nextCursor' does not exist/,
        result.output,
      );
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
