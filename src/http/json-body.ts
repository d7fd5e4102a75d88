import express from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import typeIs from 'type-is';
import { MAX_BODY_BYTES } from '../front-door/body-bytes.ts';
import { ApiError, invalidArgument } from '../base/errors.ts';

// body-parser's JSON reader (size cap, charset, length checks); it works on a plain Node request.
const parseJson = express.json({ limit: MAX_BODY_BYTES, strict: false, type: () => true });

const JSON_TYPES = ['application/json', 'application/*+json'];

const hasBody = (req: IncomingMessage) => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/** Operations take their parameters in the JSON body only: a query string would otherwise be ignored in silence. */
export function refuseQueryString(req: IncomingMessage): void {
  const url = req.url ?? '';
  const mark = url.indexOf('?');
  if (mark === -1) return;
  const first = new URLSearchParams(url.slice(mark + 1)).keys().next();
  if (!first.done)
    throw invalidArgument(`unknown parameter "${first.value.slice(0, 60)}" in the query string: parameters go in the JSON body`);
}

/**
 * An operation's body: a JSON object of at most 64 KiB. An empty body means "all defaults".
 * Every way a body can be wrong ends as invalid_argument with a message saying which way.
 */
export async function readJsonObjectBody(req: IncomingMessage, res: ServerResponse): Promise<Record<string, unknown>> {
  if (!hasBody(req)) return {};
  if (!typeIs(req, JSON_TYPES)) {
    throw invalidArgument(`Content-Type must be application/json (got "${(req.headers['content-type'] ?? 'none').slice(0, 60)}")`);
  }
  const target = req as IncomingMessage & { body?: unknown };
  await new Promise<void>((resolve, reject) =>
    parseJson(target as never, res as never, (err?: unknown) => (err ? reject(bodyError(err)) : resolve())),
  );
  // undefined: body-parser read nothing (a chunked body with no bytes). JSON `null` stays null, and is refused.
  const body = target.body === undefined ? {} : target.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidArgument('request body must be a JSON object');
  return body as Record<string, unknown>;
}

function bodyError(err: unknown): ApiError {
  switch ((err as { type?: string }).type) {
    case 'entity.too.large':
      return new ApiError('invalid_argument', `request body is over ${MAX_BODY_BYTES / 1024} KiB`, 413);
    case 'entity.parse.failed':
      return invalidArgument('request body is not valid JSON');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return invalidArgument('request body must be UTF-8 JSON');
    case 'request.size.invalid':
      return invalidArgument('request body length does not match Content-Length');
    default:
      return invalidArgument('request body could not be read');
  }
}
