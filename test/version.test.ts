import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { contractErrors } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const packageVersion = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;
const contractVersion = JSON.parse(readFileSync(new URL('../generated/openapi.json', import.meta.url), 'utf8')).info.version;

describe('GET /version', () => {
  let server: TestServer;
  // The default rate limits, with an address bucket of one request: /version must not pay for it.
  before(async () => {
    server = await startTestServer(await sqliteDatabase(), {
      RATE_LIMIT_PER_SECOND: '100',
      RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0.1',
      RATE_LIMIT_PER_ADDRESS_BURST: '1',
    });
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('names the service, its package version and its contract version, without a key', async () => {
    const response = await fetch(`${server.url}/version`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    const body = await response.json();
    assert.deepEqual(body, { service: 'event-feed', version: packageVersion, contract: contractVersion });
    assert.equal(contractErrors('VersionResponse', body), null);
  });

  it('is described in the published contract, needing no key', async () => {
    const spec = await (await fetch(`${server.url}/openapi.json`)).json();
    assert.deepEqual(spec.paths['/version'].get.security, []);
    assert.equal(
      spec.paths['/version'].get.responses['200'].content['application/json'].schema.$ref,
      '#/components/schemas/VersionResponse',
    );
  });

  it('is never refused by the address rate limit, like the health probes', async () => {
    for (let i = 0; i < 20; i++) assert.equal((await fetch(`${server.url}/version`)).status, 200, `call ${i + 1}`);
    assert.equal((await fetch(`${server.url}/nothing-here`)).status, 429, 'the address bucket is indeed spent');
  });
});
