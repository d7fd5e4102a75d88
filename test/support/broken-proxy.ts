import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Ways to break the event_feed contract, one at a time, for the conformance kit to catch. */
export type Breakage =
  | 'reversed-page'
  | 'cursor-not-echoed'
  | 'scoping-ignored'
  | 'unknown-parameter-accepted'
  | 'event-dropped-between-pages'
  // Not in the list: a response member the contract does not have, and a read that writes.
  | 'extra-response-property'
  | 'read-appends-event';

/**
 * A deliberately broken deployment: a proxy in front of a correct server that rewrites event_feed
 * calls in one way. Everything else passes through untouched.
 */
export async function startBrokenProxy(
  upstream: string,
  breakage: Breakage,
  keys: { full: string; restricted: string; write?: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name]) => !['host', 'content-length', 'connection'].includes(name)),
    ) as Record<string, string>;
    const isFeed = req.method === 'POST' && req.url === '/v1/event_feed';
    let request: any;
    try {
      request = isFeed ? JSON.parse(body) : undefined;
    } catch {
      request = undefined;
    }
    const plainObject = request && typeof request === 'object' && !Array.isArray(request);

    if (isFeed && breakage === 'scoping-ignored' && headers.authorization === `Bearer ${keys.restricted}`) {
      headers.authorization = `Bearer ${keys.full}`;
    }
    if (isFeed && breakage === 'unknown-parameter-accepted' && plainObject) {
      body = JSON.stringify(Object.fromEntries(Object.entries(request).filter(([k]) => k === 'after' || k === 'limit')));
    }

    if (isFeed && breakage === 'read-appends-event' && plainObject && request.after === undefined && keys.write) {
      // An "access log" event written by every read from the start, outside the restricted mailboxes.
      await fetch(`${upstream}/v1/emit_event`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.write}` },
        body: JSON.stringify(accessLogEvent()),
      });
    }

    const upstreamResponse = await fetch(upstream + req.url, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
    });
    let text = await upstreamResponse.text();

    if (isFeed && upstreamResponse.status === 200) {
      const page = JSON.parse(text);
      if (breakage === 'reversed-page') page.events.reverse();
      if (breakage === 'event-dropped-between-pages' && plainObject && request.after !== undefined && page.events.length > 0)
        page.events.shift();
      if (breakage === 'cursor-not-echoed' && page.events.length === 0) {
        // A fresh cursor on every "nothing new" answer instead of the one the client sent.
        const restart = await fetch(`${upstream}/v1/event_feed`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: '{"limit":1}',
        });
        page.next_cursor = (await restart.json()).next_cursor;
      }
      if (breakage === 'extra-response-property') page.has_more = page.events.length > 0;
      text = JSON.stringify(page);
    }
    if (breakage === 'extra-response-property' && req.method === 'POST' && req.url === '/mcp' && upstreamResponse.status === 200) {
      // Consistently: the MCP tool's structuredContent carries it too.
      const message = JSON.parse(text);
      if (message.result?.structuredContent?.events)
        message.result.structuredContent.has_more = message.result.structuredContent.events.length > 0;
      text = JSON.stringify(message);
    }
    res.statusCode = upstreamResponse.status;
    upstreamResponse.headers.forEach((value, name) => {
      if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(name))
        res.setHeader(name, value);
    });
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

let accessLogs = 0;
function accessLogEvent() {
  const n = `${Date.now().toString(36)}${(accessLogs++).toString(36)}`;
  return {
    type: 'mail.received',
    subject: { person: { email: `audit-${n}@example.com` }, refs: { mailbox_id: 'mbx_audit_log', message_id: `msg_log${n}` } },
    data: {
      internet_message_id: `<log-${n}@example.com>`,
      from: { email: `audit-${n}@example.com` },
      to: [{ email: 'journal@example.com' }],
      subject_line: `Lecture ${n}`,
      size_bytes: 1,
      attachment_count: 0,
      spam_score: 0,
      spam_verdict: 'pass',
    },
  };
}
