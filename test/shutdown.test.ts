import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, it } from 'node:test';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { provision, startProcessServer } from './support/process-server.ts';

describe('graceful shutdown', () => {
  it('on SIGTERM finishes the requests in flight, closes idle keep-alive connections and exits 0', async () => {
    const database = await sqliteDatabase();
    const { keys } = await provision(database.url, { rw: { permissions: ['read', 'write'] } });
    const server = await startProcessServer({ databaseUrl: database.url });
    try {
      const agent = new http.Agent({ keepAlive: true });
      const post = (path: string, body: unknown) =>
        new Promise<number>((resolve, reject) => {
          const req = http.request(
            `${server.url}${path}`,
            { method: 'POST', agent, headers: { authorization: `Bearer ${keys.rw}`, 'content-type': 'application/json' } },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode!));
            },
          );
          req.on('error', reject);
          req.end(JSON.stringify(body));
        });
      assert.equal(await post('/v1/event_feed', {}), 200); // leaves an idle keep-alive connection open

      // A burst of writes in flight when the signal arrives: each is answered, none is cut.
      const inFlight = Array.from({ length: 20 }, (_, i) => post('/v1/emit_event', sampleEvent('mbx_a', i)));
      await new Promise((r) => setTimeout(r, 5));
      server.child.kill('SIGTERM');
      const statuses = await Promise.allSettled(inFlight);
      const started = Date.now();
      const { code, signal } = await server.exited;
      assert.equal(signal, null, server.output());
      assert.equal(code, 0, server.output());
      assert.ok(Date.now() - started < 5000, 'exited promptly despite the idle keep-alive connection');
      // Requests the server had accepted were answered; later ones were refused at connect time.
      for (const s of statuses) if (s.status === 'fulfilled') assert.equal(s.value, 201);
      agent.destroy();
    } finally {
      if (server.alive) await server.kill();
      await database.drop();
    }
  });
});
