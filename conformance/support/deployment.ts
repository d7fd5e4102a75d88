import type { APIRequestContext } from '@playwright/test';

/** What the kit knows of the deployment under test: only its public address and keys. */
export const env = {
  baseUrl: process.env.EVENT_FEED_BASE_URL ?? '',
  key: process.env.EVENT_FEED_KEY,
  restrictedKey: process.env.EVENT_FEED_RESTRICTED_KEY,
  restrictedMailboxes: (process.env.EVENT_FEED_RESTRICTED_MAILBOXES ?? '').split(',').map((m) => m.trim()).filter(Boolean),
  noReadKey: process.env.EVENT_FEED_NOREAD_KEY,
  otherKey: process.env.EVENT_FEED_OTHER_KEY,
  writeKey: process.env.EVENT_FEED_WRITE_KEY,
  revokedKey: process.env.EVENT_FEED_REVOKED_KEY,
  /** The most events the kit reads from one feed; past it, checks that need the head are skipped. */
  maxEvents: Number(process.env.EVENT_FEED_MAX_EVENTS ?? 20000),
};

export const missing = (name: string, what: string) => `${name} not given: ${what} skipped`;

export interface Envelope {
  id: string;
  type: string;
  occurred_at: string;
  account: string;
  subject: { person: { email: string; name?: string }; refs: { mailbox_id?: string; message_id?: string; thread_id?: string } };
  data: Record<string, unknown>;
  v: number;
}

export interface FeedResponse {
  status: number;
  body: any;
  text: string;
  headers: Record<string, string>;
}

export async function feed(request: APIRequestContext, key: string | undefined, body: unknown): Promise<FeedResponse> {
  const response = await request.post('/v1/event_feed', {
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    data: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status(), body: parsed, text, headers: response.headers() };
}

export interface FeedRead {
  events: Envelope[];
  /** The cursor after the last page read. */
  cursor: string | undefined;
  /** Whether the read reached the head (an empty page: a short one may have stopped at the byte cap). */
  complete: boolean;
  pages: number;
}

/** Reads a feed from `after` (or the start) with one page size, up to `max` events. */
export async function readFeed(request: APIRequestContext, key: string, limit: number, options: { after?: string; max?: number } = {}): Promise<FeedRead> {
  const max = options.max ?? env.maxEvents;
  const events: Envelope[] = [];
  let cursor = options.after;
  let pages = 0;
  for (;;) {
    const page = await feed(request, key, cursor === undefined ? { limit } : { after: cursor, limit });
    if (page.status !== 200) throw new Error(`event_feed answered ${page.status}: ${page.text.slice(0, 300)}`);
    pages++;
    events.push(...page.body.events);
    cursor = page.body.next_cursor;
    if (page.body.events.length === 0) return { events, cursor, complete: true, pages };
    if (events.length >= max) return { events, cursor, complete: false, pages };
  }
}

let emitted = 0;

/** A valid mail.received event for a mailbox, unique per call. */
export function sampleEvent(mailboxId: string | undefined) {
  const n = `${Date.now().toString(36)}${(emitted++).toString(36)}`;
  return {
    type: 'mail.received',
    subject: { person: { email: `conformance-${n}@example.com`, name: 'Kit de conformité' }, refs: mailboxId ? { mailbox_id: mailboxId, message_id: `msg_kit${n}` } : {} },
    data: {
      internet_message_id: `<kit-${n}@example.com>`,
      from: { email: `conformance-${n}@example.com` },
      to: [{ email: 'boite@example.com' }],
      subject_line: `Contrôle de conformité ${n}`,
      size_bytes: 1024,
      attachment_count: 0,
      spam_score: 0,
      spam_verdict: 'pass',
    },
  };
}

export async function emit(request: APIRequestContext, mailboxId: string | undefined): Promise<Envelope> {
  const response = await request.post('/v1/emit_event', {
    headers: { 'content-type': 'application/json', authorization: `Bearer ${env.writeKey}` },
    data: JSON.stringify(sampleEvent(mailboxId)),
  });
  if (response.status() !== 201) throw new Error(`emit_event answered ${response.status()}: ${(await response.text()).slice(0, 300)}`);
  return (await response.json()).event;
}

/** A raw MCP JSON-RPC call over Streamable HTTP. */
export async function mcp(request: APIRequestContext, key: string | undefined, method: string, params?: unknown) {
  const response = await request.post('/mcp', {
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    data: JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params === undefined ? {} : { params }) }),
  });
  const text = await response.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status(), body, text, headers: response.headers() };
}

/** The byte cap of a page, as the deployment's contract documents it (`x-page-max-bytes` of event_feed). */
export async function pageMaxBytes(request: APIRequestContext): Promise<number> {
  const response = await request.get('/openapi.json');
  const spec = (await response.json()) as { paths: Record<string, { post?: Record<string, unknown> }> };
  const bytes = spec.paths['/v1/event_feed']?.post?.['x-page-max-bytes'];
  if (typeof bytes !== 'number') throw new Error('the contract at /openapi.json documents no x-page-max-bytes for event_feed');
  return bytes;
}

/** The bytes of a page's events as served: the envelopes joined by commas. */
export const eventsBytes = (events: unknown[]) => Math.max(0, Buffer.byteLength(JSON.stringify(events)) - 2);
