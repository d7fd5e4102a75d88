import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

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
