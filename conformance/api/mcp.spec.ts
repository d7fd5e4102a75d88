import { expect, test } from '../support/test.ts';
import { publishedContract } from '../support/contract.ts';
import { env, feed, mcp, missing } from '../support/deployment.ts';
import { seeded } from '../support/seed.ts';

test.describe('mcp', () => {
  test.beforeAll(seeded);
  test.skip(!env.key, missing('EVENT_FEED_KEY', 'every MCP check'));

  test("tools/list shows event_feed with the contract's schemas and read-only annotations", async ({ request }) => {
    const listed = await mcp(request, env.key, 'tools/list');
    expect(listed.status).toBe(200);
    const tool = listed.body.result.tools.find((t: { name: string }) => t.name === 'event_feed');
    expect(tool, 'event_feed is listed').toBeTruthy();
    const contract = await publishedContract(request);
    // The tool carries the contract's schemas in a compact form (refs to its own $defs, French
    // texts): it takes exactly the request's parameters, and its output schema accepts a real page.
    const parameters = contract.spec.components.schemas.EventFeedRequest.properties;
    expect(Object.keys(tool.inputSchema.properties ?? {}).sort()).toEqual(Object.keys(parameters).sort());
    expect(tool.inputSchema.additionalProperties).toBe(false);
    const page = await feed(request, env.key, { limit: 20 });
    expect(contract.validator('EventFeedResponse')(page.body)).toBe(true);
    const output = contract.compile(tool.outputSchema);
    expect(output(page.body), JSON.stringify(output.errors)).toBe(true);
    expect(tool.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false });
  });

  test('tools/call returns French text and the same object as HTTP', async ({ request }) => {
    let after: string | undefined;
    for (const limit of [3, 50]) {
      const args = after === undefined ? { limit } : { after, limit };
      const http = await feed(request, env.key, args);
      const called = await mcp(request, env.key, 'tools/call', { name: 'event_feed', arguments: args });
      expect(called.status).toBe(200);
      const result = called.body.result;
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toEqual(http.body);
      const text: string = result.content.find((c: { type: string }) => c.type === 'text')?.text ?? '';
      expect(text, 'a French text').toMatch(/événement/);
      expect(text).toContain(http.body.next_cursor);
      after = http.body.next_cursor;
    }
  });

  test('MCP refuses a missing or invalid key with 401 and WWW-Authenticate, before any tool runs', async ({ request }) => {
    for (const key of [undefined, 'garbage', 'efk_00000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']) {
      const refused = await mcp(request, key, 'tools/call', { name: 'event_feed', arguments: {} });
      expect(refused.status, `key ${key?.slice(0, 12)}`).toBe(401);
      expect(refused.headers['www-authenticate'] ?? '').toMatch(/^Bearer/i);
    }
  });

  test('MCP refuses a revoked key with 401', async ({ request }) => {
    test.skip(!env.revokedKey, missing('EVENT_FEED_REVOKED_KEY', 'the MCP revoked-key check'));
    const refused = await mcp(request, env.revokedKey, 'tools/list');
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate'] ?? '').toMatch(/^Bearer/i);
  });

  test('MCP answers a key without read with a forbidden tool error', async ({ request }) => {
    test.skip(!env.noReadKey, missing('EVENT_FEED_NOREAD_KEY', 'the MCP permission check'));
    const denied = await mcp(request, env.noReadKey, 'tools/call', { name: 'event_feed', arguments: {} });
    expect(denied.status).toBe(200);
    expect(denied.body.result.isError).toBe(true);
    const text: string = denied.body.result.content.find((c: { type: string }) => c.type === 'text')?.text ?? '';
    expect(text).toMatch(/^forbidden/);
  });

  test('MCP refuses bad arguments with the same message as HTTP', async ({ request }) => {
    for (const args of [{ limit: 0 }, { foo: 1 }, { after: 'garbage' }]) {
      const http = await feed(request, env.key, args);
      const called = await mcp(request, env.key, 'tools/call', { name: 'event_feed', arguments: args });
      expect(called.body.result.isError, JSON.stringify(args)).toBe(true);
      const text = JSON.stringify(called.body.result.content);
      expect(text).toContain('invalid_argument');
      expect(text).toContain(JSON.stringify(http.body.error.message).slice(1, -1));
    }
  });
});
