/**
 * /docs is usable from wherever it is served: "Try it out" calls the host and port that served
 * the page (the contract's server URL is relative), and the event schemas render readably.
 * The browser part needs Debian's chromium (CHROMIUM_PATH to override); without it, it is skipped
 * and says so, while the check of the served document still runs.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from '@playwright/test';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const noBrowser = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;

describe('/docs', () => {
  let server: TestServer;
  let readKey: string;
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
    const workspace = await server.workspace();
    readKey = (await server.key(workspace, ['read'])).key;
    await server.db.transaction((trx) => publish(trx, workspace, [sampleEvent('mbx_a', 1), sampleEvent('mbx_a', 2)]));
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it("the served document's server resolves, against the page's URL, to the origin that served it", async () => {
    const spec = await (await fetch(`${server.url}/openapi.json`)).json();
    assert.ok(spec.servers?.length >= 1, 'servers');
    for (const origin of [server.url, 'https://feed.example.com', 'http://10.1.2.3:8080']) {
      // Whatever host, port, scheme or proxy the page was fetched through.
      assert.equal(new URL(spec.servers[0].url, `${origin}/openapi.json`).origin, new URL(origin).origin, origin);
      assert.equal(new URL(spec.servers[0].url, `${origin}/docs`).origin, new URL(origin).origin, origin);
    }
  });

  describe('in a browser', { skip: noBrowser }, () => {
    let browser: Browser;
    let page: Page;
    before(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM });
      page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
      await page.goto(`${server.url}/docs`);
      await page.waitForSelector('#operations-events-event_feed');
    });
    after(async () => {
      await browser?.close();
    });

    it('"Try it out" on event_feed, with a key, calls the serving origin and gets 200', async () => {
      await page.click('.auth-wrapper .btn.authorize');
      await page.fill('.auth-container input', readKey);
      await page.click('.auth-btn-wrapper .btn.authorize');
      await page.click('.auth-btn-wrapper .btn-done');

      const operation = page.locator('#operations-events-event_feed');
      await operation.locator('.opblock-summary-control').click();
      await operation.locator('.try-out__btn').click();
      const called = page.waitForRequest((request) => request.url().includes('/v1/event_feed'));
      await operation.locator('.execute').click();
      const request = await called;
      assert.equal(new URL(request.url()).origin, new URL(server.url).origin, 'the page calls its own origin');
      assert.equal(request.headers().authorization, `Bearer ${readKey}`);
      const status = operation.locator('.live-responses-table .response .response-col_status').first();
      await status.waitFor();
      assert.equal((await status.innerText()).trim(), '200');
      assert.match(await operation.locator('.live-responses-table .response .response-col_description').first().innerText(), /evt_/);
    });

    it('shows the webhooks section: the delivery a receiver gets', async () => {
      const webhooks = page.locator('.webhooks-container');
      await webhooks.scrollIntoViewIfNeeded();
      const text = await webhooks.innerText();
      assert.match(text, /POST/);
      assert.match(text, /Event delivery/);
    });

    it('renders the envelope and the emit request by event type, never as "any"', async () => {
      for (const [name, branchOf] of [
        ['EventEnvelope', (type: string) => `${type}Event`],
        ['EmitEventRequest', (type: string) => `Emit${type}Request`],
      ] as const) {
        const model = page.locator('section.models article[data-json-schema-level="0"]').filter({
          has: page.locator(`:scope > .json-schema-2020-12-head .json-schema-2020-12__title:text-is("${name}")`),
        });
        await model.scrollIntoViewIfNeeded();
        await model.locator('.json-schema-2020-12-accordion').first().click();
        const oneOf = model.locator('.json-schema-2020-12-keyword--oneOf .json-schema-2020-12-accordion').first();
        if (await oneOf.count()) await oneOf.click();
        const text = await model.innerText();
        assert.doesNotMatch(text, /\bany\b/, `${name}: ${text.slice(0, 200)}`);
        // One readable branch per type, named.
        for (const branch of ['MailReceived', 'MailBounced', 'MailRejected'].map(branchOf))
          assert.ok(text.includes(branch), `${name} shows ${branch}`);
      }
    });
  });
});
