/**
 * The contract passes the linters an integrator's CI runs with their defaults, with no
 * configuration of ours: Redocly's `recommended` rules (in a folder without redocly.yaml) and
 * Spectral's `spectral:oas` ruleset, on what a live service serves (/openapi.json, /openapi.yaml)
 * and on openapi.yaml with its schemas/: no error, no warning, nothing else either. (redocly.yaml only
 * adds stricter rules, for `npm run lint:contract`.) The tools are pinned in test/outside-tools.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sqliteDatabase } from './support/databases.ts';
import { outsideTools, type OutsideTools } from './support/outside-tools.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

function run(command: string, args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(command, args, { cwd, timeout: 300_000, maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

describe('default linters on the contract, with no configuration of ours', () => {
  let server: TestServer;
  let tools: OutsideTools;
  let dir: string;

  before(async () => {
    tools = await outsideTools();
    server = await startTestServer(await sqliteDatabase());
    dir = mkdtempSync(join(tmpdir(), 'contract-linters-'));
    writeFileSync(join(dir, 'served.json'), await (await fetch(`${server.url}/openapi.json`)).text());
    writeFileSync(join(dir, 'served.yaml'), await (await fetch(`${server.url}/openapi.yaml`)).text());
    // openapi.yaml as in the repository, with the schema files it refers to, and no redocly.yaml beside it.
    cpSync(join(root, 'openapi.yaml'), join(dir, 'openapi.yaml'));
    cpSync(join(root, 'schemas'), join(dir, 'schemas'), { recursive: true });
    writeFileSync(join(dir, '.spectral.yaml'), 'extends: ["spectral:oas"]\n');
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const file of ['served.json', 'served.yaml', 'openapi.yaml']) {
    it(`Redocly recommended (no config file): no problem in ${file}`, async () => {
      assert.equal(existsSync(join(dir, 'redocly.yaml')), false);
      const { stdout, stderr } = await run(tools.node22, [tools.bin('redocly'), 'lint', file, '--format=json'], dir);
      const report = JSON.parse(stdout.slice(stdout.indexOf('{')));
      assert.equal(report.version, '2.77.0');
      const problems = report.problems.map(
        (p: { ruleId: string; message: string; location: Array<{ pointer: string }> }) =>
          `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`,
      );
      assert.deepEqual(problems, [], stderr);
      assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 });
    });

    it(`Spectral spectral:oas: no result in ${file}`, async () => {
      const out = join(dir, `${file}.spectral.json`);
      const { code, stderr } = await run(
        tools.node22,
        [tools.bin('spectral'), 'lint', file, '--format', 'json', '--output', out, '--fail-severity', 'hint'],
        dir,
      );
      const results = JSON.parse(readFileSync(out, 'utf8')).map(
        (r: { code: string; severity: number; path: string[]; message: string }) =>
          `${r.code} (severity ${r.severity}) ${r.path.join('.')}: ${r.message}`,
      );
      assert.deepEqual(results, [], stderr);
      assert.equal(code, 0, stderr);
    });
  }
});
