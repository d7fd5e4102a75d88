/**
 * docs/mcp-connecting.md as a reader uses it: every ```sh block runs as pasted against a live
 * service (its address for http://127.0.0.1:3000, a reader's READ_KEY), on the npm registry's Node
 * 22 (the Inspector 2.x needs it: a reader's `node` is put first on PATH, nothing else changes), and
 * its client configuration (the ```json block) is read by the MCP Inspector 2.12.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { outsideTools, type OutsideTools } from './support/outside-tools.ts';
import { shellBlocks } from './support/readme-blocks.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const DOC = 'docs/mcp-connecting.md';
const DOC_ADDRESS = 'http://127.0.0.1:3000';

/** What each block's output shows when it worked, by a line the block contains. */
const SHOWS: Array<{ contains: string; output: RegExp }> = [
  { contains: 'Mcp-Method: server/discover', output: /"supportedVersions":\["2026-07-28","2025-11-25"/ },
  { contains: 'Mcp-Name: event_feed', output: /"resultType":"complete".*"structuredContent":\{"events":\[/s },
  { contains: '--method tools/list --strict', output: /"name": "event_feed"[\s\S]*"name": "feed_cursor"[\s\S]*"name": "list_events"/ },
  { contains: '--tool-name event_feed', output: /3 événements, / },
  { contains: '--tool-name list_events', output: /"structuredContent"[\s\S]*"events"/ },
];

const bash = (script: string, env: NodeJS.ProcessEnv, cwd: string) =>
  new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      'bash',
      ['-euo', 'pipefail', '-c', script],
      { cwd, env, timeout: 300_000, maxBuffer: 20 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
  });

describe(`the commands of ${DOC}`, { timeout: 900_000 }, () => {
  let tools: OutsideTools;
  let server: TestServer;
  let env: NodeJS.ProcessEnv;
  const home = mkdtempSync(join(tmpdir(), 'mcp-doc-home-'));
  const bin = mkdtempSync(join(tmpdir(), 'mcp-doc-node-'));
  const blocks = shellBlocks(root, DOC);

  before(async () => {
    tools = await outsideTools();
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '' });
    const workspace = await server.workspace();
    await server.db.transaction((trx) =>
      publish(
        trx,
        workspace,
        Array.from({ length: 9 }, (_, i) => sampleEvent(i % 2 ? 'mbx_a' : 'mbx_b', i)),
      ),
    );
    symlinkSync(tools.node22, join(bin, 'node'));
    writeFileSync(join(home, '.curlrc'), '--fail-with-body\n');
    // npx keeps what it fetches in npm's cache: the machine's, so a second run fetches nothing.
    const npmCache = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
    const shell = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith('npm_') && !name.startsWith('EVENT_FEED_')),
    );
    env = {
      ...shell,
      PATH: `${bin}:${process.env.PATH}`,
      HOME: home,
      CURL_HOME: home,
      npm_config_cache: npmCache,
      READ_KEY: (await server.key(workspace, ['read'])).key,
    };
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
    rmSync(home, { recursive: true, force: true });
    rmSync(bin, { recursive: true, force: true });
  });

  it('has the blocks this test knows what to expect of', () => {
    assert.equal(blocks.length, SHOWS.length, blocks.map((b) => b.text.split('\n')[0]).join('\n'));
    for (const shows of SHOWS) assert.equal(blocks.filter((b) => b.text.includes(shows.contains)).length, 1, shows.contains);
  });

  for (const block of blocks) {
    it(`runs as pasted: ${DOC}:${block.line} ${block.text.split('\n')[0]!.slice(0, 70)}`, async () => {
      const result = await bash(block.text.replaceAll(DOC_ADDRESS, server.url), env, home);
      assert.equal(result.code, 0, `${DOC}:${block.line} exited ${result.code}:\n${result.output.slice(-3000)}`);
      const shows = SHOWS.find((s) => block.text.includes(s.contains))!;
      assert.match(result.output, shows.output);
    });
  }

  it('its client configuration is one the Inspector reads', async () => {
    const json = /```json\n([\s\S]*?)```/.exec(readFileSync(join(root, DOC), 'utf8'))![1]!;
    const config = JSON.parse(json.replaceAll(DOC_ADDRESS, server.url).replace('efk_…', env.READ_KEY!));
    const file = join(home, 'client-config.json');
    writeFileSync(file, JSON.stringify(config));
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        tools.node22,
        [tools.bin('mcp-inspector'), '--cli', '--config', file, '--server', 'event-feed', '--method', 'tools/list', '--format', 'json'],
        { env, timeout: 120_000 },
        (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(
      JSON.parse(result.stdout).result.tools.map((t: { name: string }) => t.name),
      ['event_feed', 'feed_cursor', 'list_events'],
    );
  });
});
