/**
 * An outside client: the MCP Inspector's CLI (2.12, pinned in test/outside-tools, on the
 * registry's Node 22 it needs) against a live service, as docs/mcp-connecting.md tells a person to
 * run it: flags with a header, and a client configuration file in the format current clients read,
 * in both protocol eras (`legacy`: initialize, 2025-11-25; `modern`: 2026-07-28). Its `--strict`
 * check of the tools' schemas finds nothing to report.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mcpTools } from '../generated/mcp-tools.ts';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { outsideTools, type OutsideTools } from './support/outside-tools.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('the MCP Inspector CLI 2.12', { timeout: 300_000 }, () => {
  let tools: OutsideTools;
  let server: TestServer;
  let key: string;
  let restricted: string;
  const home = mkdtempSync(join(tmpdir(), 'mcp-inspector-'));

  before(async () => {
    tools = await outsideTools();
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '' });
    const workspace = await server.workspace();
    key = (await server.key(workspace, ['read'])).key;
    restricted = (await server.key(workspace, ['read'], ['mbx_b'])).key;
    await server.db.transaction((trx) =>
      publish(
        trx,
        workspace,
        Array.from({ length: 6 }, (_, i) => sampleEvent(i < 4 ? 'mbx_a' : 'mbx_b', i)),
      ),
    );
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
    rmSync(home, { recursive: true, force: true });
  });

  /** `mcp-inspector --cli …` under Node 22, its HOME a folder of the test's (it keeps a catalog and OAuth state there). */
  const inspector = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        tools.node22,
        [tools.bin('mcp-inspector'), '--cli', ...args],
        { timeout: 120_000, env: { ...process.env, HOME: home, MCP_INSPECTOR_SECRET_STORE: 'memory' } },
        (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  const configFile = (name: string, server: Record<string, unknown>) => {
    const file = join(home, `${name}.json`);
    writeFileSync(file, JSON.stringify({ mcpServers: { 'event-feed': server } }, null, 2));
    return file;
  };

  it('lists the tools with a header, and --strict finds nothing unportable in their schemas', async () => {
    const listed = await inspector(
      `${server.url}/mcp`,
      '--transport',
      'http',
      '--header',
      `Authorization: Bearer ${key}`,
      '--method',
      'tools/list',
      '--strict',
      '--format',
      'json',
    );
    assert.equal(listed.code, 0, listed.stderr);
    const envelope = JSON.parse(listed.stdout);
    assert.deepEqual(
      envelope.result.tools.map((t: { name: string }) => t.name),
      ['event_feed', 'feed_cursor', 'list_events'],
    );
    // With --strict and --format json, any finding (errors and warnings: type arrays, untyped schemas…) is in `schemaFindings`.
    assert.equal(envelope.schemaFindings, undefined, JSON.stringify(envelope.schemaFindings, null, 1));
    assert.doesNotMatch(listed.stderr, /Schema portability/);
    for (const tool of envelope.result.tools) assert.equal(tool.annotations.readOnlyHint, true);
  });

  it('calls event_feed with a header: the HTTP answer as structuredContent, the French text', async () => {
    const called = await inspector(
      `${server.url}/mcp`,
      '--transport',
      'http',
      '--header',
      `Authorization: Bearer ${key}`,
      '--method',
      'tools/call',
      '--tool-name',
      'event_feed',
      '--tool-arg',
      'limit=3',
      '--format',
      'json',
    );
    assert.equal(called.code, 0, called.stderr);
    const { result } = JSON.parse(called.stdout);
    assert.deepEqual(result.structuredContent, (await server.post('/v1/event_feed', { limit: 3 }, key)).json);
    assert.match(result.content[0].text, /^3 événements, /);
  });

  for (const era of ['legacy', 'modern'] as const) {
    it(`reads a client configuration file (mcpServers, type http, headers), protocol era ${era}`, async () => {
      const file = configFile(era, {
        type: 'http',
        url: `${server.url}/mcp`,
        headers: { Authorization: `Bearer ${restricted}` },
        protocolEra: era,
      });
      const connected = await inspector('--config', file, '--server', 'event-feed', '--method', 'initialize', '--format', 'json');
      assert.equal(connected.code, 0, connected.stderr);
      assert.equal(JSON.parse(connected.stdout).result.protocolVersion, era === 'modern' ? '2026-07-28' : '2025-11-25');
      const listed = await inspector('--config', file, '--server', 'event-feed', '--method', 'tools/list', '--format', 'json');
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(
        JSON.parse(listed.stdout).result.tools.map((t: { name: string }) => t.name),
        mcpTools.map((t) => t.name).sort(),
      );
      const called = await inspector(
        '--config',
        file,
        '--server',
        'event-feed',
        '--method',
        'tools/call',
        '--tool-name',
        'list_events',
        '--tool-args-json',
        '{"limit": 10}',
        '--format',
        'json',
      );
      assert.equal(called.code, 0, called.stderr);
      const { structuredContent } = JSON.parse(called.stdout).result;
      // The key's mailbox restriction holds whatever the client and the protocol era.
      assert.deepEqual(
        structuredContent.events.map((e: { subject: { refs: { mailbox_id: string } } }) => e.subject.refs.mailbox_id),
        ['mbx_b', 'mbx_b'],
      );
    });
  }

  it('without a key: the auth_required exit code (3), and no tool runs', async () => {
    const refused = await inspector(`${server.url}/mcp`, '--transport', 'http', '--method', 'tools/list', '--stored-auth-only');
    assert.equal(refused.code, 3, refused.stderr);
    const wrongKey = await inspector(
      '--config',
      configFile('wrong', { type: 'http', url: `${server.url}/mcp`, headers: { Authorization: 'Bearer efk_nope' } }),
      '--server',
      'event-feed',
      '--method',
      'tools/list',
      '--stored-auth-only',
    );
    assert.equal(wrongKey.code, 3, wrongKey.stderr);
  });
});
