/**
 * What an assistant pays for in every conversation: the whole tools/list result, as the service
 * answers it, stays within 24 KB of compact JSON, and every text in it speaks French.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const MAX_TOOLS_LIST_BYTES = 24 * 1024;

/**
 * English words that French prose never uses (no `on`, `or`, `an`, `pas`, `page`…, which are
 * French too). Code between backticks (`after`, `next_cursor`, `mail.*`) is left out first.
 */
const ENGLISH = new Set([
  'the',
  'and',
  'of',
  'to',
  'is',
  'are',
  'with',
  'for',
  'when',
  'this',
  'that',
  'from',
  'by',
  'which',
  'not',
  'be',
  'its',
  'it',
  'in',
  'at',
  'if',
  'each',
  'every',
  'only',
  'after',
  'before',
  'all',
  'was',
  'will',
  'has',
  'have',
  'event',
  'events',
  'returns',
  'omit',
]);
/** French function words, one of which any sentence of three words or more holds. */
const FRENCH = new Set([
  'le',
  'la',
  'les',
  'de',
  'des',
  'du',
  'un',
  'une',
  'et',
  'est',
  'à',
  'au',
  'aux',
  'en',
  'pour',
  'par',
  'sur',
  'ou',
  'avec',
  'sans',
  'ne',
  'ce',
  'qui',
  'que',
  'son',
  'sa',
  'ses',
  'd',
  'l',
  's',
  'il',
  'chaque',
  'selon',
]);

const words = (text: string) =>
  text
    .replace(/`[^`]*`/g, ' ')
    .toLowerCase()
    .split(/[^a-zà-ÿœæ]+/u)
    .filter(Boolean);

/** Every `title` and `description` text in a tools/list result (schemas included), with where it is. */
function texts(value: unknown, path = 'result'): Array<[string, string]> {
  if (Array.isArray(value)) return value.flatMap((item, i) => texts(item, `${path}[${i}]`));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, child]): Array<[string, string]> => {
    // Under `properties` the keys are parameter names, not texts.
    if (path.endsWith('.properties')) return texts(child, `${path}.${key}`);
    if ((key === 'title' || key === 'description') && typeof child === 'string') return [[`${path}.${key}`, child]];
    return texts(child, `${path}.${key}`);
  });
}

/** Why a text is not French, or undefined. */
export function notFrench(text: string): string | undefined {
  const list = words(text);
  const english = list.filter((word) => ENGLISH.has(word));
  if (english.length) return `English words: ${[...new Set(english)].join(', ')}`;
  if (list.length >= 3 && !list.some((word) => FRENCH.has(word))) return 'no French word';
  return undefined;
}

describe('MCP tools/list', () => {
  let server: TestServer;
  let result: { tools: Array<Record<string, any>> };
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
    const workspace = await server.workspace();
    const key = (await server.key(workspace, ['read'])).key;
    const response = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(response.status, 200);
    result = ((await response.json()) as { result: typeof result }).result;
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it(`is at most ${MAX_TOOLS_LIST_BYTES} bytes of compact JSON for all the tools`, () => {
    assert.ok(result.tools.length >= 2, 'every tool is counted');
    const bytes = Buffer.byteLength(JSON.stringify(result));
    assert.ok(bytes <= MAX_TOOLS_LIST_BYTES, `tools/list is ${bytes} bytes`);
  });

  it("speaks French only: every title and description, the schemas' included", () => {
    const all = texts(result);
    assert.ok(all.length > 20, `${all.length} texts found`);
    for (const tool of result.tools) {
      assert.ok(tool.title && tool.description, `${tool.name} has a title and a description`);
      for (const name of Object.keys(tool.inputSchema.properties ?? {})) {
        assert.ok(tool.inputSchema.properties[name].description, `${tool.name}: parameter ${name} is described`);
      }
    }
    const faults = all.flatMap(([where, text]) => {
      const why = notFrench(text);
      return why ? [`${where}: ${why}: ${text.slice(0, 80)}`] : [];
    });
    assert.deepEqual(faults, []);
  });

  it('is portable: no type arrays (single-type dialects refuse them); a nullable value is anyOf with a null branch', () => {
    const arrays: string[] = [];
    const walk = (value: unknown, path: string): void => {
      if (Array.isArray(value)) return value.forEach((item, i) => walk(item, `${path}[${i}]`));
      if (typeof value !== 'object' || value === null) return;
      for (const [key, child] of Object.entries(value)) {
        if (key === 'type' && Array.isArray(child) && !path.endsWith('.properties')) arrays.push(`${path}.type`);
        walk(child, `${path}.${key}`);
      }
    };
    walk(result, 'result');
    assert.deepEqual(arrays, []);
    const listEvents = result.tools.find((tool) => tool.name === 'list_events')!;
    assert.deepEqual(listEvents.outputSchema.properties.next_page_token.anyOf, [{ type: 'string' }, { type: 'null' }]);
  });

  it("the language check tells the contract's English texts from French ones", () => {
    assert.match(
      String(notFrench('Opaque cursor returned as `next_cursor` by a previous call; the feed resumes right after it.')),
      /English/,
    );
    assert.match(String(notFrench('Events after the cursor, in emission order (oldest first).')), /English/);
    assert.equal(notFrench("Curseur opaque reçu en `next_cursor` à l'appel précédent : le flux reprend juste après."), undefined);
    assert.equal(notFrench('Flux des événements'), undefined);
  });
});
