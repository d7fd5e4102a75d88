import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { mcpTools } from '../../generated/mcp-tools.ts';
import { loadSpec } from '../../src/contract/spec.ts';

/** The official SDK client, connected with a bearer key. */
export async function mcpClient(baseUrl: string, key: string): Promise<Client> {
  const client = new Client({ name: 'event-feed-tests', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
  );
  return client;
}

/** A raw tools/call whose `arguments` is the given JSON text, byte for byte. */
export async function rawToolCall(baseUrl: string, key: string, tool: string, argumentsJson: string) {
  const response = await fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":${JSON.stringify(tool)},"arguments":${argumentsJson}}}`,
  });
  return { status: response.status, body: (await response.json()) as any };
}

interface ListedTool {
  name: string;
  inputSchema: { properties?: Record<string, unknown>; additionalProperties?: unknown };
  outputSchema?: Record<string, unknown>;
}

/**
 * A listed tool's schemas say what the contract says: they are the ones generated from it, the
 * input takes exactly the request's parameters and no other, and the output schema, as the SDK
 * client compiles it (its default draft-07 Ajv), accepts the contract's example answers and
 * refuses them altered (an unknown data field, an unknown type, data of another type).
 */
export function assertSaysTheContract(tool: ListedTool, request: string, response: string): void {
  const generated = mcpTools.find((t) => t.name === tool.name);
  assert.ok(generated, tool.name);
  assert.deepEqual(tool.inputSchema, generated.inputSchema);
  assert.deepEqual(tool.outputSchema, generated.outputSchema);
  const spec = loadSpec();
  const components = spec.components.schemas;
  assert.deepEqual(Object.keys(tool.inputSchema.properties ?? {}).sort(), Object.keys(components[request].properties).sort());
  assert.equal(tool.inputSchema.additionalProperties, false);

  const validate = new AjvJsonSchemaValidator().getValidator(tool.outputSchema as never);
  const operation = Object.values<any>(spec.paths).find((item) => item.post?.operationId === tool.name).post;
  const examples = [
    ...(components[response].examples ?? []),
    ...Object.values<{ value: unknown }>(operation.responses['200'].content['application/json'].examples ?? {}).map((e) => e.value),
  ] as Array<{ events: Array<Record<string, any>> }>;
  assert.ok(
    examples.some((e) => e.events.length > 0),
    `${tool.name}: an example with events`,
  );
  for (const example of examples) {
    assert.equal(validate(example).errorMessage, undefined, `${tool.name}: ${JSON.stringify(example).slice(0, 200)}`);
    if (example.events.length === 0) continue;
    const [first, ...rest] = example.events;
    const altered = [
      { ...first, data: { ...first!.data, unknown_field: 1 } },
      { ...first, type: 'mail.opened' },
      { ...first, type: first!.type === 'mail.sent' ? 'mail.bounced' : 'mail.sent' },
      { ...first, surplus: true },
    ];
    for (const event of altered)
      assert.equal(
        validate({ ...example, events: [event, ...rest] }).valid,
        false,
        `${tool.name} refuses ${JSON.stringify(event).slice(0, 120)}`,
      );
  }
}
