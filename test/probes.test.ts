/**
 * The probes (issue 23, part 4): /healthz answers while the process runs, /readyz while the
 * database answers and the server is not draining; both as the contract says.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { contractErrors } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('health and readiness probes', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
  });
  after(async () => {
    await server.stop().catch(() => {});
    await server.database.drop();
  });

  it('/healthz and /readyz answer as the contract says, on GET only', async () => {
    const health = await fetch(`${server.url}/healthz`);
    assert.equal(health.status, 200);
    const healthBody = await health.json();
    assert.deepEqual(healthBody, { status: 'ok' });
    assert.equal(contractErrors('HealthResponse', healthBody), null);
    const ready = await fetch(`${server.url}/readyz`);
    assert.equal(ready.status, 200);
    const readyBody = await ready.json();
    assert.deepEqual(readyBody, { status: 'ready' });
    assert.equal(contractErrors('ReadinessResponse', readyBody), null);
    for (const path of ['/healthz', '/readyz']) {
      const other = await fetch(`${server.url}${path}`, { method: 'POST' });
      assert.equal(other.status, 404);
      assert.deepEqual(await other.json(), {
        error: { code: 'invalid_argument', message: `nothing at POST ${path}; the API is described at /openapi.json` },
      });
    }
  });

  it('/readyz answers 503 "draining" once the server shuts down, while /healthz stays 200', async () => {
    // Requests begun before the shutdown (headers not complete yet): their connections are busy,
    // so they are neither refused nor closed, and are answered after close() has begun.
    const pending = ['/readyz', '/healthz'].map((path) => {
      const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
      socket.write(`GET ${path} HTTP/1.1\r\nHost: probe\r\n`);
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk));
      return { socket, answer: new Promise<string>((resolve) => socket.on('close', () => resolve(answer))) };
    });
    await new Promise((r) => setTimeout(r, 100));
    const closing = server.close();
    assert.equal(server.services.lifecycle.draining, true);
    await new Promise((r) => setTimeout(r, 100)); // idle connections are swept meanwhile; these are not idle
    for (const { socket } of pending) socket.end('Connection: close\r\n\r\n');
    const [ready, health] = await Promise.all(pending.map((p) => p.answer));
    assert.match(ready!, /^HTTP\/1\.1 503 /);
    const body = JSON.parse(ready!.slice(ready!.indexOf('\r\n\r\n') + 4));
    assert.deepEqual(body, { status: 'not ready', reason: 'draining' });
    assert.equal(contractErrors('ReadinessResponse', body), null);
    assert.match(health!, /^HTTP\/1\.1 200 /);
    await closing;
  });
});
