import type { StreamTokenResponse } from '../../generated/types.ts';
import type { OperationInput } from '../../generated/operations.ts';
import { streamPathOf } from '../contract/operations.ts';
import type { OperationContext } from './context.ts';

/** Where the contract serves event_feed to an EventSource (GET, `x-stream-of: event_feed`). */
const STREAM_PATH = streamPathOf('event_feed');

/**
 * stream_token: a token that opens the key's event stream with a plain GET, for a browser's
 * EventSource (StreamTokens), until `ttl_seconds` from now. Writes nothing: it is signed,
 * not stored, and the key behind it is looked up at each use.
 */
export function streamToken(
  ctx: Pick<OperationContext<'read'>, 'principal' | 'clock' | 'streamTokens'>,
  input: OperationInput<'stream_token'>,
): StreamTokenResponse {
  // Expiries are whole seconds in the token: the answer says the one it holds.
  const expiresAtMs = Math.ceil((ctx.clock.now().getTime() + input.ttl_seconds * 1000) / 1000) * 1000;
  const token = ctx.streamTokens.mint(ctx.principal.keyId, expiresAtMs);
  return { token, expires_at: new Date(expiresAtMs).toISOString(), stream_url: `${STREAM_PATH}?token=${token}` };
}
