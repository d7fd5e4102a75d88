/**
 * Every answer a browser can open carries the security headers, set once by the front door
 * (setSecurityHeaders): a Content-Security-Policy fitting the page (the web view, /docs, the consent
 * page, everything else), framing refused, no Referer, no sniffing. And the web view's sign-in form
 * never puts the key in an address, even when its script does not load.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sqliteDatabase } from './support/databases.ts';
import { authorizationUrl, openConsent, pkce, registeredClient } from './support/oauth.ts';
import { startTestServer, type TestServer } from './support/server.ts';

/** The directives of a policy, by name. */
function directives(policy: string | null): Map<string, string[]> {
  assert.ok(policy, 'a Content-Security-Policy');
  return new Map(
    policy
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .filter((words) => words[0])
      .map(([name, ...values]) => [name!, values]),
  );
}

function assertCommonHeaders(path: string, headers: Headers): Map<string, string[]> {
  assert.equal(headers.get('x-frame-options'), 'DENY', `${path}: X-Frame-Options`);
  assert.equal(headers.get('referrer-policy'), 'no-referrer', `${path}: Referrer-Policy`);
  assert.equal(headers.get('x-content-type-options'), 'nosniff', `${path}: nosniff`);
  const csp = directives(headers.get('content-security-policy'));
  assert.deepEqual(csp.get('frame-ancestors'), [`'none'`], `${path}: frame-ancestors`);
  assert.deepEqual(csp.get('base-uri'), [`'none'`], `${path}: base-uri`);
  assert.ok(csp.has('default-src'), `${path}: default-src`);
  return csp;
}

describe('security headers on every answer', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('the web view: its own scripts, styles and API only, no inline script, unframeable', async () => {
    const res = await fetch(`${server.url}/`);
    assert.equal(res.status, 200);
    const csp = assertCommonHeaders('/', res.headers);
    assert.deepEqual(csp.get('default-src'), [`'none'`]);
    assert.deepEqual(csp.get('script-src'), [`'self'`]);
    assert.deepEqual(csp.get('connect-src'), [`'self'`]);
    assert.deepEqual(csp.get('form-action'), [`'self'`]);
    assert.ok(!(csp.get('style-src') ?? []).includes(`'unsafe-inline'`));
    const html = await res.text();
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script (none would run)');
  });

  it('/docs: its bundled scripts from this origin, "Try it out" to this origin, unframeable', async () => {
    const res = await fetch(`${server.url}/docs`);
    assert.equal(res.status, 200);
    const csp = assertCommonHeaders('/docs', res.headers);
    assert.deepEqual(csp.get('script-src'), [`'self'`]);
    assert.deepEqual(csp.get('connect-src'), [`'self'`]);
    const html = await res.text();
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    for (const src of html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g))
      assert.ok(src[1]!.startsWith('/'), `a script of this origin: ${src[1]}`);
  });

  it('the consent page: its own policy (a nonce for its style, forms to here and the redirect), unframeable', async () => {
    const clientId = await registeredClient(server.url);
    const start = await openConsent(authorizationUrl(server.url, { clientId, challenge: pkce().challenge, state: 's' }));
    assert.equal(start.status, 200, start.text.slice(0, 300));
    const csp = assertCommonHeaders('/authorize', start.headers);
    assert.deepEqual(csp.get('default-src'), [`'none'`]);
    assert.match((csp.get('style-src') ?? []).join(' '), /^'nonce-/);
    assert.equal(start.headers.get('content-security-policy')!.split(',').length, 1, 'one policy, not two');
  });

  it('every other page a browser can open: a policy that allows nothing, framing refused', async () => {
    const paths = [
      '/view.css',
      '/view.js',
      '/event-labels.js',
      '/docs/init.js',
      '/docs/assets/swagger-ui.css',
      '/openapi.json',
      '/openapi.yaml',
      '/asyncapi.json',
      '/healthz',
      '/readyz',
      '/version',
      '/no-such-page',
      '/v1/event_feed',
      '/v1/no_such_operation',
      '/mcp',
      '/.well-known/oauth-authorization-server',
      '/.well-known/oauth-protected-resource/mcp',
      '/authorize',
      '/token',
      '/register',
    ];
    for (const path of paths) {
      const res = await fetch(`${server.url}${path}`, { redirect: 'manual' });
      await res.arrayBuffer();
      const csp = assertCommonHeaders(path, res.headers);
      if (path !== '/authorize') assert.deepEqual(csp.get('default-src'), [`'none'`], `${path}: default-src`);
    }
    const posted = await server.post('/v1/event_feed', {});
    assertCommonHeaders('POST /v1/event_feed', posted.headers);
  });
});

describe('the web view’s sign-in form', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('without its script, submits nothing of the key, and never in an address', async () => {
    const html = await (await fetch(`${server.url}/`)).text();
    const form = /<form\b[^>]*\bid="login-form"[^>]*>([\s\S]*?)<\/form>/.exec(html);
    assert.ok(form, '#login-form');
    const tag = /<form\b[^>]*>/.exec(form[0])![0];
    assert.match(tag, /\bmethod="post"/i, 'a POST: a GET puts its fields in the address');
    const action = /\baction="([^"]*)"/.exec(tag)?.[1];
    assert.ok(action !== undefined && action.startsWith('/'), 'posts to this site');
    const input = /<input\b[^>]*\bid="key"[^>]*>/.exec(form[1]!)?.[0];
    assert.ok(input, 'the key field');
    assert.doesNotMatch(input, /\bname=/, 'a field without a name is never submitted');
    assert.match(input, /type="password"/);
    // What the browser would do without the script: post the form (nothing of the key) to its action.
    const res = await fetch(new URL(action!, server.url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
      redirect: 'manual',
    });
    assert.equal(res.status, 303, 'back to the page');
    assert.equal(new URL(res.headers.get('location')!, server.url).pathname, '/');
    assert.equal(new URL(res.headers.get('location')!, server.url).search, '');
    // Even a body sent by hand is never echoed.
    const echoed = await fetch(new URL(action!, server.url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'key=efk_secret_value',
      redirect: 'manual',
    });
    assert.doesNotMatch((await echoed.text()) + (echoed.headers.get('location') ?? ''), /efk_secret_value/);
  });
});
