/**
 * An assistant connects with OAuth as a real one does (issue 32, part 4), on both databases: the
 * MCP SDK's client with its own OAuth support meets /mcp's 401, discovers the metadata,
 * registers itself (RFC 7591) and sends the person to the authorization URL; a real browser
 * (Debian's Chromium, in an en-US locale) fills the French consent page with a key restricted
 * to one mailbox, sees that mailbox named, and consents; the browser lands on the assistant's
 * loopback redirect with the code, the SDK exchanges it with its verifier, and event_feed
 * answers only that mailbox's events. The page refuses to be framed by another site. Without
 * Chromium it is skipped, visibly.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { chromium, type Browser } from '@playwright/test';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const noBrowser = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;

/** The assistant's loopback redirect: records each request's URL, and can serve a page of its own (another site). */
interface Callback {
  server: Server;
  url: string;
  hits: URL[];
  page: string;
}

async function startCallback(): Promise<Callback> {
  const callback: Callback = { server: createServer(), url: '', hits: [], page: '' };
  callback.server.on('request', (req, res) => {
    const url = new URL(req.url ?? '/', callback.url);
    if (url.pathname === '/framing') return void res.writeHead(200, { 'content-type': 'text/html' }).end(callback.page);
    callback.hits.push(url);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('Vous pouvez fermer cette fenêtre.');
  });
  await new Promise<void>((resolve) => callback.server.listen(0, '127.0.0.1', resolve));
  callback.url = `http://127.0.0.1:${(callback.server.address() as AddressInfo).port}`;
  return callback;
}

/** The SDK's OAuth client side, kept in memory, handing the authorization URL to the test's browser. */
class TestOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  constructor(private readonly redirect: string) {}
  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Assistant de test',
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(
    `an assistant connects with OAuth, in Chromium, on ${kind}`,
    { skip: noBrowser || (skip && 'Postgres unreachable (see notice above)') },
    () => {
      let server: TestServer;
      let browser: Browser;
      let callback: Callback;
      let restricted: { id: string; key: string };

      before(async () => {
        server = await startTestServer(await create());
        const workspace = await server.workspace({ name: 'Atelier Dupont' });
        restricted = await server.key(workspace, ['read'], ['mbx_ventes']);
        await server.db.transaction((trx) =>
          publish(
            trx,
            workspace,
            Array.from({ length: 8 }, (_, i) => sampleEvent(i % 2 ? 'mbx_ventes' : 'mbx_support', i)),
          ),
        );
        callback = await startCallback();
        browser = await chromium.launch({ executablePath: CHROMIUM });
      });
      after(async () => {
        await browser?.close();
        callback?.server.close();
        await server?.stop();
        await server?.database.drop();
      });

      it('the SDK client registers, the person consents in the browser, and event_feed answers the key’s mailbox only', async () => {
        const provider = new TestOAuthProvider(`${callback.url}/callback`);
        const mcpUrl = new URL(`${server.url}/mcp`);
        const first = new Client({ name: 'oauth-test', version: '1.0.0' });
        await assert.rejects(first.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })), /Unauthorized/i);
        assert.ok(provider.client?.client_id, 'registered itself (RFC 7591)');
        const authorizationUrl = provider.authorizationUrl;
        assert.ok(authorizationUrl, 'sent the person to the authorization URL');
        assert.equal(authorizationUrl.searchParams.get('resource'), `${server.url}/mcp`);
        assert.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');

        const context = await browser.newContext({ locale: 'en-US' });
        const page = await context.newPage();
        const typedKeys: string[] = [];
        page.on('request', (request) => typedKeys.push(request.url()));
        await page.goto(authorizationUrl.href);
        assert.equal(await page.getAttribute('html', 'lang'), 'fr');
        await page.getByText('« Assistant de test »').first().waitFor();
        assert.ok((await page.textContent('body'))!.includes(new URL(callback.url).host), 'the redirect host is named');
        await page.getByLabel('Clé d’API de l’espace').fill(restricted.key);
        await page.getByRole('button', { name: 'Vérifier la clé' }).click();
        await page.getByText('Confirmer l’accès').waitFor();
        const confirm = (await page.textContent('body'))!;
        assert.match(confirm, /Atelier Dupont/);
        assert.match(confirm, /mbx_ventes/);
        assert.doesNotMatch(confirm, /mbx_support/);
        assert.ok(!(await page.content()).includes(restricted.key), 'the key is not in the page');
        await page.getByRole('button', { name: 'Autoriser' }).click();
        await page.waitForURL(`${callback.url}/callback?**`);
        await context.close();
        assert.ok(
          typedKeys.every((url) => !url.includes(restricted.key)),
          'the key was in no URL the browser asked for',
        );

        const landed = callback.hits.find((hit) => hit.pathname === '/callback')!;
        assert.equal(landed.searchParams.get('iss'), `${server.url}/`);
        const code = landed.searchParams.get('code');
        assert.ok(code);
        const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
        await transport.finishAuth(code);
        assert.match(provider.saved?.access_token ?? '', /^efo_/);

        const client = new Client({ name: 'oauth-test', version: '1.0.0' });
        await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
        const result = await client.callTool({ name: 'event_feed', arguments: { limit: 100 } });
        assert.equal(result.isError, undefined, JSON.stringify(result));
        const events = (result.structuredContent as { events: Array<{ subject: { refs: { mailbox_id: string } } }> }).events;
        assert.equal(events.length, 4);
        assert.ok(events.every((event) => event.subject.refs.mailbox_id === 'mbx_ventes'));
        await client.close();
      });

      it('cannot be framed by another site (clickjacking)', async () => {
        const registered = (await (
          await fetch(`${server.url}/register`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ redirect_uris: [`${callback.url}/callback`], client_name: 'Cadre' }),
          })
        ).json()) as { client_id: string };
        const url = new URL(`${server.url}/authorize`);
        for (const [name, value] of Object.entries({
          response_type: 'code',
          client_id: registered.client_id,
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
        }))
          url.searchParams.set(name, value);
        callback.page = `<!doctype html><iframe id="f" src="${url.href.replace(/&/g, '&amp;')}"></iframe>`;
        const page = await browser.newPage();
        const refused = new Promise<boolean>((resolve) =>
          page.on('console', (message) => /frame-ancestors|Refused to display/i.test(message.text()) && resolve(true)),
        );
        await page.goto(`${callback.url}/framing`);
        assert.equal(
          await Promise.race([refused, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000))]),
          true,
          'Chromium refused to display the page in a frame',
        );
        const framed = page.frames().find((frame) => frame !== page.mainFrame());
        assert.ok(!(await framed?.content().catch(() => ''))?.includes('api_key'), 'the form is not in the frame');
        await page.close();
      });
    },
  );
}
