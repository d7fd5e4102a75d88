/**
 * The official MCP conformance suite's `authorization` command against the service's
 * authorization server (issue 32, part 4): @modelcontextprotocol/conformance, pinned in
 * test/outside-tools, run under the registry's Node 22, against a live service on SQLite. Its two
 * scenarios: the authorization server metadata (RFC 8414, with client ID metadata document
 * support), and the authorization code grant, for which the suite prints an authorization URL and
 * waits for the code on its own loopback callback: Debian's Chromium opens that URL and a person's
 * consent is given on the French page, then the suite exchanges the code itself and checks the
 * token response. Run with the `resource` parameter (RFC 8707, as current clients send it) and
 * without it (as older ones do). Every check passes: EXPECTED_FAILURES is empty, and the test fails
 * when a check fails that is not listed there, or when a listed one passes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser } from '@playwright/test';
import { sqliteDatabase } from './support/databases.ts';
import { registeredClient } from './support/oauth.ts';
import { outsideTools, type OutsideTools } from './support/outside-tools.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const noBrowser = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;

/** Checks of the suite that fail against this server, with why. None. */
const EXPECTED_FAILURES: Record<string, string> = {};

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
  errorMessage?: string;
}

/** A port free now (the suite's callback server binds it; the client's redirect URI names it). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('the MCP conformance suite’s authorization scenarios', { skip: noBrowser }, () => {
  let server: TestServer;
  let tools: OutsideTools;
  let browser: Browser;
  let key: string;

  before(async () => {
    tools = await outsideTools();
    server = await startTestServer(await sqliteDatabase());
    key = (await server.key(await server.workspace({ name: 'Conformité' }), ['read'])).key;
    browser = await chromium.launch({ executablePath: CHROMIUM });
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    await server?.database.drop();
  });

  /** Runs `conformance authorization` to its end, consenting in Chromium when it asks; its checks. */
  async function runSuite(withResource: boolean): Promise<{ checks: Check[]; output: string }> {
    const port = await freePort();
    const clientId = await registeredClient(server.url, `http://127.0.0.1:${port}/callback`, 'Suite de conformité MCP');
    const outputDir = mkdtempSync(join(tmpdir(), 'oauth-conformance-'));
    const args = [
      tools.bin('conformance'),
      'authorization',
      '--url',
      `${server.url}/`,
      '--client-id',
      clientId,
      '--port',
      String(port),
      '-o',
      outputDir,
    ];
    if (withResource) args.push('--resource', `${server.url}/mcp`);
    const child = spawn(tools.node22, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      const authorizationUrl = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no authorization URL from the suite within 60 s:\n${output}`)), 60_000);
        const read = (chunk: Buffer) => {
          output += chunk;
          const url = /^(http:\/\/\S+\/authorize\?\S+)$/m.exec(output)?.[1];
          if (url) {
            clearTimeout(timer);
            resolve(url);
          }
        };
        child.stdout.on('data', read);
        child.stderr.on('data', read);
        void exited.then(() => reject(new Error(`the suite ended before asking for consent:\n${output}`)));
      });
      if (withResource) assert.equal(new URL(authorizationUrl).searchParams.get('resource'), `${server.url}/mcp`);
      const page = await browser.newPage({ locale: 'en-US' });
      await page.goto(authorizationUrl);
      await page.getByLabel('Clé d’API de l’espace').fill(key);
      await page.getByRole('button', { name: 'Vérifier la clé' }).click();
      await page.getByRole('button', { name: 'Autoriser' }).click();
      await page.waitForURL(`http://127.0.0.1:${port}/callback?**`);
      await page.close();
      const code = await Promise.race([exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 60_000))]);
      assert.notEqual(code, 'timeout', `the suite did not end:\n${output}`);
      const checks = readdirSync(outputDir).flatMap(
        (dir) => JSON.parse(readFileSync(join(outputDir, dir, 'checks.json'), 'utf8')) as Check[],
      );
      return { checks, output };
    } finally {
      child.kill();
      rmSync(outputDir, { recursive: true, force: true });
    }
  }

  for (const withResource of [true, false]) {
    it(`every check passes (${withResource ? 'with' : 'without'} the resource parameter)`, async () => {
      const { checks, output } = await runSuite(withResource);
      console.log(
        `# conformance authorization (${withResource ? 'with' : 'without'} resource): ${checks.map((check) => `${check.id} ${check.status}`).join(', ')}`,
      );
      assert.deepEqual(
        checks.map((check) => check.id).sort(),
        ['authorization-code-grant', 'authorization-server-metadata', 'authorization-server-metadata-cimd'],
        output,
      );
      const failing = checks.filter((check) => check.status !== 'SUCCESS');
      assert.deepEqual(
        failing.map((check) => `${check.id}: ${check.status} ${check.errorMessage ?? ''}`.trim()),
        Object.keys(EXPECTED_FAILURES),
        'checks that do not pass are exactly the expected failures',
      );
    });
  }
});
