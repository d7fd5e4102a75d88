import type { APIRequestContext } from '@playwright/test';
import { writesAllowed } from './writes.ts';

/** What the kit knows of the deployment under test: only its public address and keys. */
export const env = {
  baseUrl: process.env.EVENT_FEED_BASE_URL ?? '',
  key: process.env.EVENT_FEED_KEY,
  restrictedKey: process.env.EVENT_FEED_RESTRICTED_KEY,
  restrictedMailboxes: (process.env.EVENT_FEED_RESTRICTED_MAILBOXES ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean),
  noReadKey: process.env.EVENT_FEED_NOREAD_KEY,
  otherKey: process.env.EVENT_FEED_OTHER_KEY,
  writeKey: process.env.EVENT_FEED_WRITE_KEY,
  revokedKey: process.env.EVENT_FEED_REVOKED_KEY,
  /** An admin key the keys above were made with when not given (provisionKeys, before the checks start). */
  adminKey: process.env.EVENT_FEED_ADMIN_KEY,
  /** Emitting is an explicit opt-in: events can't be deleted, and the workspace's real webhooks deliver them. */
  allowWrites: writesAllowed(),
  /** The most events the kit reads from one feed; past it, checks that need the head are skipped. */
  maxEvents: Number(process.env.EVENT_FEED_MAX_EVENTS ?? 20000),
};

export const missing = (name: string, what: string) => `${name} not given: ${what} skipped`;

/** Why a check of isolation between workspaces does not run: no key of another workspace, which an admin key cannot make either. */
export const otherWorkspaceMissing = (what: string) =>
  env.adminKey
    ? `EVENT_FEED_OTHER_KEY not given, and EVENT_FEED_ADMIN_KEY makes keys of its own workspace only (create_key makes no workspace): ${what} skipped`
    : missing('EVENT_FEED_OTHER_KEY', what);

/** Why the kit may not emit events, or undefined when it may (a write key and the opt-in). */
export function writesRefused(what: string): string | undefined {
  if (!env.writeKey) return missing('EVENT_FEED_WRITE_KEY', what);
  if (!env.allowWrites) return `read-only run (EVENT_FEED_ALLOW_WRITES=1 / --allow-writes not given): ${what} skipped`;
  return undefined;
}

/** The end of a skip reason for checks that need events the kit could have added. */
export const toAddEvents = 'and the kit may not add any (EVENT_FEED_WRITE_KEY with EVENT_FEED_ALLOW_WRITES=1)';

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

export async function feed(
  request: APIRequestContext,
  key: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<FeedResponse> {
  return post(request, '/v1/event_feed', key, body, headers);
}

/** `POST /v1/feed_cursor` (`body` undefined: no body at all). */
export async function feedCursor(request: APIRequestContext, key: string | undefined, body?: unknown): Promise<FeedResponse> {
  return post(request, '/v1/feed_cursor', key, body);
}

async function post(
  request: APIRequestContext,
  path: string,
  key: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<FeedResponse> {
  const response = await request.post(path, {
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...headers,
    },
    ...(body === undefined ? {} : { data: typeof body === 'string' ? body : JSON.stringify(body) }),
    // A held call (Prefer: wait) may take up to the contract's 60 s.
    timeout: 90_000,
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
export async function readFeed(
  request: APIRequestContext,
  key: string,
  limit: number,
  options: { after?: string; max?: number } = {},
): Promise<FeedRead> {
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

/**
 * How the events the kit emits are recognised (conformance/README.md): the contract allows no free
 * marker field, so every identifying field carries one. Sender and recipient addresses are at
 * this reserved domain (RFC 2606 `.invalid`: never deliverable).
 */
export const MARKER = {
  domain: 'event-feed-conformance.invalid',
  subjectPrefix: '[event-feed conformance]',
  messageIdPrefix: 'msg_conformance_',
  threadId: 'thr_conformance',
  otherMailbox: 'mbx_conformance_other',
};

/** A valid mail.received event for a mailbox, unique per call, marked as the kit's. */
export function sampleEvent(mailboxId: string | undefined) {
  const n = `${Date.now().toString(36)}${(emitted++).toString(36)}`;
  return {
    type: 'mail.received',
    subject: {
      person: { email: `conformance-${n}@${MARKER.domain}`, name: 'Kit de conformité' },
      refs: mailboxId ? { mailbox_id: mailboxId, message_id: `${MARKER.messageIdPrefix}${n}`, thread_id: MARKER.threadId } : {},
    },
    data: {
      internet_message_id: `<conformance-${n}@${MARKER.domain}>`,
      from: { email: `conformance-${n}@${MARKER.domain}` },
      to: [{ email: `boite@${MARKER.domain}` }],
      subject_line: `${MARKER.subjectPrefix} contrôle ${n}`,
      size_bytes: 1024,
      attachment_count: 0,
      spam_score: 0,
      spam_verdict: 'pass',
    },
  };
}

export async function emit(request: APIRequestContext, mailboxId: string | undefined): Promise<Envelope> {
  const refused = writesRefused('emitting events');
  if (refused) throw new Error(`the kit tried to emit an event on a run that may not: ${refused}`);
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
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
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
