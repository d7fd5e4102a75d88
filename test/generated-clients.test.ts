/**
 * Clients generated from the contract a live service serves (`GET /openapi.json`), by the
 * mainstream generators at their defaults, with no pre-processing: openapi-typescript +
 * openapi-fetch, @hey-api/openapi-ts, orval (fetch client), pinned in test/outside-tools and run
 * with the Node 22 they need. A small consumer of each (test/support/generated-client-consumers.ts)
 * is type-checked under `strict`, the generated code and the libraries' declarations included: a
 * page loop on `next_cursor`, an event narrowed on `type` to its own `data`, a typed emit, an error
 * answer; each `@ts-expect-error` in it is a mistake the types must refuse. The openapi-fetch and
 * hey-api ones then run against the service: they emit and read every page (and openapi-fetch's
 * reads a refusal).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sqliteDatabase } from './support/databases.ts';
import { HEY_API_CONSUMER, OPENAPI_FETCH_CONSUMER, ORVAL_CONSUMER } from './support/generated-client-consumers.ts';
import { outsideTools, type OutsideTools } from './support/outside-tools.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { typecheckConsumer } from './support/typecheck-consumer.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

function run(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) =>
    execFile(command, args, { cwd, env, timeout: 300_000, maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    ),
  );
}

describe('clients generated from the served /openapi.json by outside tools, at their defaults', () => {
  let server: TestServer;
  let tools: OutsideTools;
  let dir: string;
  let specUrl: string;
  let readKey: string;
  let writeKey: string;

  /** Runs a tool's bin with Node 22 in the consumer's folder; fails the test with its output. */
  const generate = async (bin: string, args: string[]) => {
    const result = await run(tools.node22, [tools.bin(bin), ...args], dir);
    assert.equal(result.code, 0, `${bin} ${args.join(' ')}:\n${result.output}`);
  };
  const typecheck = async (file: string, source: string) => {
    writeFileSync(join(dir, file), source);
    const { code, output } = await typecheckConsumer(dir, [file]);
    assert.equal(code, 0, `tsc --strict on ${file} and the code it imports:\n${output}`);
  };
  const version = (name: string) =>
    JSON.parse(readFileSync(join(tools.dir, 'node_modules', name, 'package.json'), 'utf8')).version as string;

  before(async () => {
    tools = await outsideTools();
    server = await startTestServer(await sqliteDatabase());
    const workspace = await server.workspace();
    readKey = (await server.key(workspace, ['read'])).key;
    writeKey = (await server.key(workspace, ['write'])).key;
    specUrl = `${server.url}/openapi.json`;
    dir = mkdtempSync(join(tmpdir(), 'generated-clients-'));
    // The consumer's project: ES modules, the generators' runtime libraries (openapi-fetch) resolvable.
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
    symlinkSync(join(tools.dir, 'node_modules'), join(dir, 'node_modules'), 'dir');
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`openapi-typescript + openapi-fetch: types that compile, narrow and refuse wrong data; the JSON page by default; run against the service`, async () => {
    assert.equal(version('openapi-typescript'), '7.13.0');
    assert.equal(version('openapi-fetch'), '0.17.0');
    await generate('openapi-typescript', [specUrl, '-o', 'openapi-typescript/api.d.ts']);
    await typecheck('openapi-fetch-consumer.ts', OPENAPI_FETCH_CONSUMER);

    // An event already in the feed, of another type than the consumer's.
    const seeded = await server.post(
      '/v1/emit_event',
      {
        type: 'mail.delivered',
        subject: { person: { email: 'claire.dubois@exemple.fr' }, refs: { mailbox_id: 'mbx_contact-boutique' } },
        data: {
          internet_message_id: '<a@b.fr>',
          recipient: 'claire.dubois@exemple.fr',
          remote_mta: 'mx1.mail.ovh.net',
          smtp_response: '250 ok',
          delivery_ms: 12,
          attempt: 1,
        },
      },
      writeKey,
    );
    assert.equal(seeded.status, 201, seeded.text);
    // Node 22 runs the TypeScript as written (its types stripped): what an integrator's `node consumer.ts` does.
    const live = await run(tools.node22, ['openapi-fetch-consumer.ts'], dir, {
      ...process.env,
      EVENT_FEED_URL: server.url,
      READ_KEY: readKey,
      WRITE_KEY: writeKey,
    });
    assert.equal(live.code, 0, live.output);
    const seen = JSON.parse(live.output.trim().split('\n').at(-1)!);
    assert.match(seen.stored, /^evt_/);
    assert.deepEqual(seen.summaries, ['claire.dubois@exemple.fr delivered in 12 ms', 'p.martin@laposte.net bounced (unknown_user)']);
    assert.deepEqual(seen.refused, { status: 403, code: 'forbidden' });
  });

  it('@hey-api/openapi-ts: its SDK compiles, narrows events on type and refuses wrong data; compiled, it runs against the service', async () => {
    assert.equal(version('@hey-api/openapi-ts'), '0.99.0');
    await generate('openapi-ts', ['-i', specUrl, '-o', 'hey-api']);
    await typecheck('hey-api-consumer.ts', HEY_API_CONSUMER);

    // Its generated client is TypeScript with `.js` imports: compiled as a project would, then run.
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const compiled = await run(
      process.execPath,
      [
        tsc,
        '--outDir',
        'hey-api-build',
        '--target',
        'ES2022',
        '--module',
        'NodeNext',
        '--moduleResolution',
        'NodeNext',
        '--skipLibCheck',
        '--types',
        'node',
        '--typeRoots',
        join(root, 'node_modules', '@types'),
        'hey-api-consumer.ts',
      ],
      dir,
    );
    // The @ts-expect-error lines are errors tsc expects, so its exit code is 0; anything else is not.
    assert.equal(compiled.code, 0, compiled.output);
    const workspace = await server.workspace();
    const key = (await server.key(workspace, ['read', 'write'])).key;
    const live = await run(tools.node22, [join('hey-api-build', 'hey-api-consumer.js')], dir, {
      ...process.env,
      EVENT_FEED_URL: server.url,
      KEY: key,
    });
    assert.equal(live.code, 0, live.output);
    assert.deepEqual(JSON.parse(live.output.trim().split('\n').at(-1)!), ['p.martin@laposte.net bounced (unknown_user)']);
  });

  it('orval (fetch client): its functions compile, answer the JSON page, narrow events on type and refuse wrong data', async () => {
    assert.match(version('orval'), /^8\./);
    await generate('orval', ['-i', specUrl, '-o', 'orval/api.ts', '--client', 'fetch']);
    await typecheck('orval-consumer.ts', ORVAL_CONSUMER);
  });
});
