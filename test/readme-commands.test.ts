import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { documents, shellBlocks, type ShellBlock } from './support/readme-blocks.ts';
import { startTestServer, type TestServer } from './support/server.ts';

// Every ```sh / ```bash block of every README and of every page of docs/ runs as pasted (from the
// repository's root, against a live server), or is excused below with the reason. A new block that needs a variable the reader
// would have set (a key…) gets it from readerEnvironment(); one that cannot run in a test gets an
// excuse. Blocks run with `bash -euo pipefail`, and curl fails on an HTTP error (.curlrc below).

const root = fileURLToPath(new URL('..', import.meta.url));

/** The address the READMEs use for a local service (`npm start`): the test's server stands in for it. */
const README_ADDRESS = 'http://127.0.0.1:3000';

/** Blocks that cannot run here, by README and a line they contain, and why. */
const EXCUSED: Array<{ readme: string; contains: string; why: string; placeholders?: boolean }> = [
  {
    readme: 'README.md',
    contains: 'npm install && npm start',
    why: 'installs packages and serves the demo on port 3000 until stopped: the test server stands for it',
  },
  { readme: 'README.md', contains: 'npm test', why: 'the test suite this test is part of' },
  {
    readme: 'bench/README.md',
    contains: 'npm run bench',
    why: 'the benchmark takes minutes; test/bench-quick.test.ts runs its quick mode',
  },
  {
    readme: 'conformance/README.md',
    contains: 'export EVENT_FEED_KEY=efk_…',
    why: "the reader's own keys (placeholders): the test sets each of these variables itself",
    placeholders: true,
  },
  {
    readme: 'docs/operating.md',
    contains: 'docker run --rm -p 3000:3000 -e HOST=0.0.0.0',
    why: 'needs a Docker engine, which test machines do not run',
  },
  {
    readme: 'docs/operating.md',
    contains: 'otel/opentelemetry-collector',
    why: 'runs an OpenTelemetry Collector in Docker, and serves until stopped; test/tracing.test.ts starts the service with these variables against a real OTLP receiver',
  },
  {
    readme: 'client/README.md',
    contains: 'event-feed-client.tgz',
    why: "installs into a reader's project: test/client-readme.test.ts runs it in an empty folder",
  },
  {
    readme: 'client/README.md',
    contains: 'node follow.mjs',
    why: 'follows the feed until Ctrl-C: test/client-readme.test.ts runs it and stops it',
  },
  {
    readme: 'client/README.md',
    contains: 'node receiver.mjs',
    why: 'serves until stopped: test/client-readme.test.ts runs it and sends it a delivery',
  },
  {
    readme: 'client/README.md',
    contains: 'node local-receiver.mjs',
    why: 'serves until stopped: test/client-readme.test.ts runs it and grades it with check-receiver',
  },
  {
    readme: 'client/README.md',
    contains: 'event-feed-client listen',
    why: 'follows the feed until Ctrl-C: test/client-readme.test.ts runs it through failures and a restart',
  },
  {
    readme: 'client/README.md',
    contains: 'event-feed-client check-receiver',
    why: "grades the receiver of the block before it, in the reader's project: test/client-readme.test.ts runs it",
  },
  {
    readme: 'docs/webhooks-local.md',
    contains: 'event-feed-client listen',
    why: 'follows the feed until Ctrl-C, into a receiver on port 4000: test/client-readme.test.ts runs the same command through failures and a restart',
  },
  {
    readme: 'docs/webhooks-local.md',
    contains: 'event-feed-client check-receiver',
    why: 'grades a receiver on port 4000 the reader runs: test/client-readme.test.ts runs the same command against good and broken receivers',
  },
  {
    readme: 'docs/contract-and-clients.md',
    contains: 'npm install openapi-fetch@0.17.0',
    why: 'installs a project from the registry: test/generated-clients.test.ts generates, type-checks and runs the same client with the same pinned tools',
  },
  {
    readme: 'docs/contract-and-clients.md',
    contains: '@hey-api/openapi-ts@0.99.0',
    why: "needs Node 22.18 or later: test/generated-clients.test.ts runs the same generator, pinned, under the registry's Node 22",
  },
  {
    readme: 'docs/contract-and-clients.md',
    contains: 'orval@8',
    why: "needs Node 22.18 or later: test/generated-clients.test.ts runs orval 8.38.0 under the registry's Node 22",
  },
  {
    readme: 'docs/contract-and-clients.md',
    contains: '@asyncapi/parser@3.6.6',
    why: 'installs a project from the registry: test/asyncapi.test.ts parses the served documents with the same parser, pinned',
  },
  {
    readme: 'docs/contract-and-clients.md',
    contains: '@redocly/cli@2.77.0',
    why: 'downloads the linters with npx: test/contract-linters.test.ts runs Redocly and Spectral, pinned, on the served contract with their default rules',
  },
];

/** The variables a reader of the READMEs has set, for the test's server. Add one when a README uses a new one. */
async function readerEnvironment(server: TestServer): Promise<Record<string, string>> {
  const workspace = await server.workspace({ name: 'Lecteur du README', verified: true });
  const other = await server.workspace({ name: 'Autre espace', verified: true });
  const key = async (permissions: Array<'read' | 'write' | 'admin'>, mailboxes?: string[], ws = workspace) =>
    (await server.key(ws, permissions, mailboxes)).key;
  const revoked = await server.key(workspace, ['read']);
  await server.revokeKey(revoked.id);
  const events = Array.from({ length: 30 }, (_, i) => sampleEvent(['mbx_ventes', 'mbx_autre', 'mbx_support'][i % 3], i));
  await server.db.transaction((trx) => publish(trx, workspace, events));
  return {
    // The CLI blocks act on the database the service uses, as the README says to run them; never on
    // whatever the checkout's default data/ holds (a fresh clone has none).
    DATABASE_URL: server.database.url,
    READ_KEY: await key(['read']),
    WRITE_KEY: await key(['read', 'write']),
    ADMIN_KEY: await key(['read', 'write', 'admin']),
    // The conformance kit's (conformance/README.md).
    EVENT_FEED_BASE_URL: server.url,
    EVENT_FEED_KEY: await key(['read']),
    EVENT_FEED_RESTRICTED_KEY: await key(['read'], ['mbx_ventes', 'mbx_support']),
    EVENT_FEED_RESTRICTED_MAILBOXES: 'mbx_ventes,mbx_support',
    EVENT_FEED_NOREAD_KEY: await key(['write']),
    EVENT_FEED_OTHER_KEY: await key(['read'], undefined, other),
    EVENT_FEED_REVOKED_KEY: revoked.key,
    EVENT_FEED_WRITE_KEY: await key(['read', 'write']),
  };
}

const excuseOf = (block: ShellBlock) =>
  EXCUSED.find((e) => e.readme === block.readme && block.text.split('\n').some((line) => line.includes(e.contains)));
const blocks = documents(root).flatMap((readme) => shellBlocks(root, readme));

function bash(args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('bash', args, { cwd: root, env, timeout: 240_000, maxBuffer: 20 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

describe('the commands of the READMEs', () => {
  let server: TestServer;
  let env: Record<string, string>;
  let curlHome: string;

  before(async () => {
    // The service as `npm start` runs it: default rate limits.
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '' });
    curlHome = mkdtempSync(join(tmpdir(), 'readme-curl-'));
    writeFileSync(join(curlHome, '.curlrc'), '--fail-with-body\n');
    // A reader's shell: none of the variables `npm test` sets for its scripts, nor the kit's from the caller.
    const shell = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith('npm_') && !name.startsWith('EVENT_FEED_')),
    ) as Record<string, string>;
    env = { ...shell, CURL_HOME: curlHome, ...(await readerEnvironment(server)) };
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
    rmSync(curlHome, { recursive: true, force: true });
  });

  it('finds the shell blocks of every README and of the pages of docs/', () => {
    const pages = [
      'docs/reading-the-feed.md',
      'docs/emitting.md',
      'docs/library.md',
      'docs/webhooks.md',
      'docs/keys.md',
      'docs/mcp.md',
      'docs/operating.md',
      'docs/conformance-kit.md',
    ];
    for (const readme of ['README.md', 'conformance/README.md', 'bench/README.md', 'client/README.md', ...pages]) {
      assert.ok(
        blocks.some((b) => b.readme === readme),
        `no shell block found in ${readme}`,
      );
    }
  });

  it('excuses only blocks that exist', () => {
    const stale = EXCUSED.filter((e) => !blocks.some((b) => excuseOf(b) === e));
    assert.deepEqual(
      stale.map((e) => `${e.readme}: ${e.contains}`),
      [],
      'an excuse matches no block any more: remove it',
    );
  });

  it('every block is valid shell (bash -n), excused or not, and no comment swallows a line continuation', async () => {
    for (const block of blocks) {
      // `cmd \` then `# comment \`: the comment ends the command, and the next lines run on their own.
      const swallowed = block.text.split('\n').findIndex((line) => /\s#[^'"]*\\$/.test(line));
      assert.equal(
        swallowed,
        -1,
        `${block.readme}:${block.line + 1 + swallowed}: a comment ends this line, so its backslash continues nothing`,
      );
      const checked = await bash(['-n', '-c', block.text], env);
      assert.equal(checked.code, 0, `${block.readme}:${block.line}: ${checked.output}`);
    }
  });

  it('the placeholder blocks set only variables the test gives the other blocks', () => {
    for (const block of blocks.filter((b) => excuseOf(b)?.placeholders)) {
      for (const [, name] of block.text.matchAll(/^export (\w+)=/gm))
        assert.ok(name! in env, `${block.readme}:${block.line} sets ${name}, which readerEnvironment() does not`);
    }
  });

  for (const block of blocks) {
    const excuse = excuseOf(block);
    const title = `${block.readme}:${block.line} ${block.text
      .split('\n')
      .find((l) => l.trim() && !l.startsWith('#'))
      ?.slice(0, 60)}`;
    it(`runs as pasted: ${title}`, { skip: excuse && `excused: ${excuse.why}` }, async () => {
      const script = block.text.replaceAll(README_ADDRESS, server.url);
      const result = await bash(['-euo', 'pipefail', '-c', script], env);
      assert.equal(result.code, 0, `${block.readme}:${block.line} exited ${result.code}:\n${result.output.slice(-3000)}`);
    });
  }
});
