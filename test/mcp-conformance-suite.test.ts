/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
 * test/outside-tools, run with the registry's Node 22 it needs) against the service on SQLite with
 * its default limits, for the requirements of both protocol generations /mcp serves: 2025-11-25
 * (initialize first) and 2026-07-28 (stateless). The suite sends no credentials: a reverse proxy
 * adds the bearer key and forwards the rest as is (Host and Origin included).
 *
 * Every check that applies to a server with our tools passes. The checks that need what the suite's
 * own fixture server has (tools such as test_simple_text, prompts, resources, the tasks extension)
 * are listed with their reasons in test/fixtures/mcp-conformance/expected-failures-<revision>.yaml;
 * the suite itself fails the run when a check outside that list fails, or when a listed one passes.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { publish } from '../src/library.ts';
import { startBearerProxy, type BearerProxy } from './support/bearer-proxy.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { outsideTools, type OutsideTools } from './support/outside-tools.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const REVISIONS = ['2025-11-25', '2026-07-28'] as const;
const baselineFile = (revision: string) =>
  fileURLToPath(new URL(`./fixtures/mcp-conformance/expected-failures-${revision}.yaml`, import.meta.url));

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

describe('the official MCP conformance suite', { timeout: 600_000 }, () => {
  let tools: OutsideTools;
  let server: TestServer;
  let proxy: BearerProxy;
  const work = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));

  before(async () => {
    tools = await outsideTools();
    // A default deployment's limits (rate limit on): what a client of one meets.
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '' });
    const workspace = await server.workspace();
    const key = (await server.key(workspace, ['read'])).key;
    await server.db.transaction((trx) =>
      publish(
        trx,
        workspace,
        Array.from({ length: 6 }, (_, i) => sampleEvent('mbx_a', i)),
      ),
    );
    proxy = await startBearerProxy(server.url, key);
  });
  after(async () => {
    await proxy?.close();
    await server?.stop();
    await server?.database.drop();
    rmSync(work, { recursive: true, force: true });
  });

  /** Runs `conformance server` under Node 22; its exit code, output and each scenario's checks (by scenario name). */
  const suite = (args: string[], out: string) =>
    new Promise<{ code: number; output: string; checks: Map<string, Check[]> }>((resolve) => {
      execFile(
        tools.node22,
        [tools.bin('conformance'), 'server', '--url', `${proxy.url}/mcp`, '-o', out, ...args],
        { timeout: 300_000, maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const checks = new Map<string, Check[]>();
          for (const dir of readdirSync(out, { withFileTypes: true }).filter((entry) => entry.isDirectory())) {
            const scenario = dir.name.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
            try {
              checks.set(scenario, JSON.parse(readFileSync(join(out, dir.name, 'checks.json'), 'utf8')));
            } catch {
              // a scenario that wrote no checks
            }
          }
          resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr, checks });
        },
      );
    });

  for (const revision of REVISIONS) {
    it(`--requirements ${revision}: every check passes but the expected failures, and those still fail`, async () => {
      const run = await suite(
        ['--requirements', revision, '--expected-failures', baselineFile(revision)],
        mkdtempSync(join(work, `${revision}-`)),
      );
      const summary = run.output.slice(run.output.indexOf('=== SUMMARY ==='));
      assert.equal(run.code, 0, `the suite's verdict against the baseline:\n${summary.slice(-6000)}`);
      assert.match(summary, /Baseline check passed/);

      // What the baseline cannot hide: every message the service sent was valid per the
      // revision's schema, and the checks of what the service does offer passed.
      assert.ok(run.checks.size >= 30, `${run.checks.size} scenarios ran`);
      for (const [scenario, checks] of run.checks) {
        for (const check of checks.filter((c) => c.id === 'wire-schema-valid'))
          assert.equal(check.status, 'SUCCESS', `${scenario}: ${check.errorMessage}`);
      }
      const passed = (scenario: string) => {
        const checks = run.checks.get(scenario);
        assert.ok(checks?.length, `${scenario} ran`);
        const failed = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
        assert.deepEqual(
          failed.map((c) => `${c.id}: ${c.errorMessage}`),
          [],
          scenario,
        );
      };
      passed('tools-list');
      passed('dns-rebinding-protection');
      if (revision === '2025-11-25') {
        passed('server-initialize');
        passed('ping');
      } else {
        passed('http-header-validation');
        const stateless = run.checks.get('server-stateless')!;
        const excused = new Set([
          'sep-2575-server-rejects-undeclared-capability',
          'sep-2575-missing-capability-http-400',
          'sep-2575-http-server-no-independent-requests-on-stream',
          'sep-2575-server-no-log-without-loglevel',
        ]);
        const others = stateless.filter((c) => !excused.has(c.id));
        // Skipped: the subscriptions/listen checks, for a server that advertises no list changes.
        assert.ok(others.filter((c) => c.status === 'SUCCESS').length >= 20, 'server-stateless: the checks that apply pass');
        assert.deepEqual(
          others.filter((c) => c.status !== 'SUCCESS' && c.status !== 'SKIPPED').map((c) => `${c.id}: ${c.errorMessage}`),
          [],
        );
        const caching = run.checks.get('caching')!;
        assert.equal(caching.find((c) => c.id === 'sep-2549-tools-list-caching-hints')?.status, 'SUCCESS');
      }
    });
  }

  it('the baseline bites: a failure it does not list, or a listed check that passes, fails the run', async () => {
    const scenario = ['--scenario', 'tools-call-image', '--spec-version', '2026-07-28'];
    const empty = join(work, 'empty.yaml');
    writeFileSync(empty, 'server: []\n');
    const unexpected = await suite([...scenario, '--expected-failures', empty], mkdtempSync(join(work, 'unexpected-')));
    assert.notEqual(unexpected.code, 0, unexpected.output.slice(-2000));
    assert.match(unexpected.output, /Unexpected failures/);

    const stale = join(work, 'stale.yaml');
    writeFileSync(stale, 'server:\n  - tools-call-image:tools-call-image\n  - tools-call-image:wire-schema-valid\n');
    const passing = await suite([...scenario, '--expected-failures', stale], mkdtempSync(join(work, 'stale-')));
    assert.notEqual(passing.code, 0, passing.output.slice(-2000));
    assert.match(passing.output, /wire-schema-valid/);
  });
});
