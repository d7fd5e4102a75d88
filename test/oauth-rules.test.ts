/**
 * The OAuth pieces that decide alone, without a server (in `npm run test:unit`): PUBLIC_URL, which
 * `resource` values name this deployment's MCP endpoint, which redirect URIs may be registered,
 * and how the tokens handed out are told apart from API keys and from each other.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isAccessToken,
  isAuthorizationCode,
  newAccessToken,
  newAuthorizationCode,
  newGrantId,
  newRefreshToken,
  refreshTokenGrant,
} from '../src/oauth/tokens.ts';
import { ConfigError, loadConfig } from '../src/app/config.ts';
import { redirectTarget, redirectUriProblem } from '../src/oauth/redirect-uris.ts';
import { canonicalResource, mcpResource } from '../src/oauth/urls.ts';

describe('PUBLIC_URL', () => {
  it('is an https origin (http for localhost or 127.0.0.1), kept without its final slash', () => {
    assert.equal(loadConfig({}).publicUrl, undefined);
    assert.equal(loadConfig({ PUBLIC_URL: 'https://Feed.Example.com/' }).publicUrl, 'https://feed.example.com');
    assert.equal(loadConfig({ PUBLIC_URL: 'https://feed.example.com:8443' }).publicUrl, 'https://feed.example.com:8443');
    assert.equal(loadConfig({ PUBLIC_URL: 'http://127.0.0.1:3000' }).publicUrl, 'http://127.0.0.1:3000');
    assert.equal(loadConfig({ PUBLIC_URL: 'http://localhost:3000' }).publicUrl, 'http://localhost:3000');
  });

  it('refuses anything an OAuth issuer may not be', () => {
    for (const value of [
      'feed.example.com',
      'http://feed.example.com',
      'https://feed.example.com/api',
      'https://feed.example.com/?x=1',
      'https://feed.example.com/#x',
      'https://user:pw@feed.example.com',
      'ftp://feed.example.com',
    ]) {
      assert.throws(() => loadConfig({ PUBLIC_URL: value }), ConfigError, value);
    }
  });
});

describe('the resource parameter (RFC 8707)', () => {
  const origin = 'https://feed.example.com';
  it('names this deployment’s /mcp however it is spelled', () => {
    for (const raw of [
      'https://feed.example.com/mcp',
      'HTTPS://FEED.EXAMPLE.COM/mcp',
      'https://feed.example.com:443/mcp',
      'https://feed.example.com/mcp/',
    ]) {
      assert.equal(canonicalResource(raw, origin), mcpResource(origin), raw);
    }
  });
  it('names nothing else', () => {
    for (const raw of [
      'https://feed.example.com',
      'https://feed.example.com/',
      'https://feed.example.com/v1',
      'https://feed.example.com/mcp?x',
      'https://feed.example.com/mcp#f',
      'http://feed.example.com/mcp',
      'https://other.example/mcp',
      'https://feed.example.com:8443/mcp',
      'not a url',
      'https://feed.example.com/MCP',
    ]) {
      assert.equal(canonicalResource(raw, origin), undefined, raw);
    }
  });
});

describe('redirect URIs', () => {
  it('takes https, loopback http on any port, and an application’s own scheme', () => {
    for (const uri of [
      'https://claude.ai/api/mcp/auth_callback',
      'http://127.0.0.1:33418/',
      'http://localhost/callback',
      'http://[::1]:9/cb',
      'com.example.app:/oauth',
      'cursor://anysphere.cursor-retrieval/oauth/callback',
    ]) {
      assert.equal(redirectUriProblem(uri), undefined, uri);
    }
  });
  it('refuses plain http elsewhere, what a browser runs itself, fragments, credentials, and overlong URIs', () => {
    for (const uri of [
      'http://assistant.example/cb',
      'http://192.168.1.2/cb',
      'javascript:alert(1)',
      'data:text/html,x',
      'file:///etc/passwd',
      'https://a.example/cb#frag',
      'https://u:p@a.example/cb',
      'relative/path',
      `https://a.example/${'x'.repeat(1000)}`,
    ]) {
      assert.ok(redirectUriProblem(uri), uri);
    }
  });
  it('names the host, or the application’s scheme, for the consent page', () => {
    assert.equal(redirectTarget('https://claude.ai/api/mcp/auth_callback'), 'claude.ai');
    assert.equal(redirectTarget('http://127.0.0.1:33418/'), '127.0.0.1:33418');
    assert.equal(redirectTarget('cursor://anysphere/cb'), 'cursor:');
  });
});

describe('tokens and codes', () => {
  it('are told apart from API keys and from each other by their shape', () => {
    const grant = newGrantId();
    const access = newAccessToken();
    const code = newAuthorizationCode();
    const refresh = newRefreshToken(grant);
    assert.ok(isAccessToken(access) && !isAccessToken(code) && !isAccessToken(refresh));
    assert.ok(isAuthorizationCode(code) && !isAuthorizationCode(access));
    assert.equal(refreshTokenGrant(refresh), grant);
    assert.equal(refreshTokenGrant(access), undefined);
    assert.equal(isAccessToken(`efk_01JD4S3QW1Y9V5K2M8N7P6R4A1_${'a'.repeat(43)}`), false);
    assert.notEqual(newAccessToken(), access, 'random');
  });
});
