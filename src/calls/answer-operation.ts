import type { Socket } from 'node:net';
import { hasTrait, OPERATION_PERMISSIONS, OPERATION_TRAITS, type OperationId, type Operations } from '../../generated/operations.ts';
import { permit } from '../auth/principal.ts';
import { jsonByteLength } from '../front-door/send-json.ts';
import type { RateState } from '../limits/rate-limiter.ts';
import type { Transport } from '../metrics/metrics.ts';
import type { OperationContext } from '../operations/context.ts';
import { runOperation, type OperationOutcome, type ReadView } from '../operations/registry.ts';
import type { Call } from './call.ts';
import type { CallServices } from './call-services.ts';
import { heldRead, streamReads, type StreamStep } from './follow.ts';
import type { FeedPage } from '../feed/page.ts';

/** What an edge asks beyond the operation and its body: how long a read may be held (`Prefer: wait`), and how a feed read is made. */
export interface AnswerOptions {
  /** A read that may be held (`x-may-be-held`) waits up to this long while nothing is new. */
  waitMs?: number;
  /** The connection, whose idle timeout is off while a read is held on purpose. */
  socket?: Socket;
  view?: ReadView;
  transport: Transport;
  /** The call's own message token is paid here first (an MCP tools/call: refused, the model reads a rate_limited tool error). */
  paysItsMessage?: boolean;
  /** What the answer's bytes are besides the body (the MCP text of a tool's result): they are paid for too. */
  extraBytes?: (outcome: OperationOutcome<OperationId>) => number;
}

/** How the call ended: the outcome with the rate state after it was paid, or the error with the rate state after the refund. */
export type Answered<Id extends OperationId> =
  { ok: true; outcome: OperationOutcome<Id>; rate: RateState | undefined } | { ok: false; error: unknown; rate: RateState | undefined };

/**
 * A call of one operation of the contract, as every edge makes it, top to bottom (the edge has
 * identified the caller: Call.open, and parsed the body; it writes the answer this returns):
 * 1. permission, before the body is looked at (a key without it would learn the schema): the one check (permit);
 * 2. a page's worst-case cost reserved, when the answer may be a page (`x-answers-page`);
 * 3. the body validated against the contract (the validator every transport shares);
 * 4. the key checked again, now the body is in (a request may take up to REQUEST_TIMEOUT_MS);
 * 5. memory: a page's worst case admitted, except for the feed, whose read admits its own once it
 *    has a page to read (Call as its ReadBudget: alone, or shared with identical reads);
 * 6. the operation run through runOperation, or held while nothing is new (heldRead);
 * 7. settled: paid at the answer's size, holding only the memory it takes; refunded on failure.
 * What the call still holds goes back when its response closes (Call.end).
 */
export async function answerOperation<Id extends OperationId>(
  services: CallServices,
  call: Call,
  operationId: Id,
  body: () => Promise<unknown> | unknown,
  options: AnswerOptions,
): Promise<Answered<Id>> {
  try {
    if (options.paysItsMessage) call.pay();
    const ctx = contextFor(services, call, operationId);
    const answersPage = OPERATION_TRAITS[operationId].answersPage;
    if (answersPage) call.reservePage();
    const request = services.requestValidator.check(operationId, await body());
    await call.recheck();
    const heldOnReads = hasTrait(operationId, 'mayBeHeld');
    if (answersPage && !heldOnReads) await call.admit();
    const outcome =
      heldOnReads && options.waitMs !== undefined && options.waitMs > 0
        ? ((await heldRead(services, call, ctx as OperationContext<'read'>, request as Operations['event_feed']['request'], {
            waitMs: options.waitMs,
            socket: options.socket,
            shareFirst: true,
          })) as OperationOutcome<Id>)
        : await runOperation(operationId, ctx, request, options.view);
    const bytes = jsonByteLength(outcome.json) + (options.extraBytes?.(outcome) ?? 0);
    const rate = call.settleAnswer(bytes);
    if (answersPage) services.metrics?.pageServed(operationId, options.transport, bytes);
    return { ok: true, outcome, rate };
  } catch (error) {
    const rate = call.refund();
    call.letGoOfMemory();
    return { ok: false, error, rate };
  }
}

/** The operation's context for this call: the services, the caller proven to hold the operation's permission, and the call as its reads' budget. */
export function contextFor<Id extends OperationId>(services: CallServices, call: Call, operationId: Id) {
  const principal = permit(call.principal, OPERATION_PERMISSIONS[operationId]);
  // The services are the prototype, not copied: a context costs one object per call.
  const ctx = Object.create(services) as OperationContext<(typeof OPERATION_PERMISSIONS)[Id]>;
  ctx.principal = principal;
  ctx.budget = call;
  return ctx;
}

/**
 * A message that runs no operation (an MCP handshake, a refused request): one token of the key's
 * budget, like any call, whatever the protocol generation. The error (rate_limited, with its
 * headers) when the budget is empty; undefined once paid.
 */
export function payForMessage(call: Call): { error: unknown } | undefined {
  try {
    call.pay();
    return undefined;
  } catch (error) {
    return { error };
  }
}

/** Where a stream's pages go (the edge renders them: Server-Sent Events). */
export interface StreamSink {
  /** The first read succeeded: the status line and headers go out. */
  open(): void;
  /** Writes a page's frames: their bytes, and whether the client took them in time (false: it stalled or left, and the stream ends). */
  write(page: FeedPage): { bytes: number; taken: Promise<boolean> };
  /** A wait ended with nothing new: a keep-alive. */
  idle(): void;
  /** The stream ended: the client reconnects (the server closes) or went away. */
  end(): void;
  /** A read failed once the stream was open: the error is its last message. */
  fail(error: unknown): void;
}

/**
 * event_feed as a stream (`x-may-stream`), the same steps as answerOperation: permission, a page
 * reserved, the body validated, the key checked again, the first page's memory admitted; then each
 * page read (streamReads), paid at its size once framed, its memory held until the client took it.
 * The first read comes before anything is sent, so a refused cursor is answered like the JSON
 * call (the Answered error); after that, an error is the stream's last message.
 */
export async function streamOperation(
  services: CallServices,
  call: Call,
  body: () => Promise<unknown> | unknown,
  sink: StreamSink,
  options: { idleMs: number; socket?: Socket; lastEventId?: string },
): Promise<{ error: unknown; rate: RateState | undefined } | undefined> {
  let steps: AsyncGenerator<StreamStep> | undefined;
  let step: IteratorResult<StreamStep>;
  try {
    const ctx = contextFor(services, call, 'event_feed');
    call.reservePage();
    const request = services.requestValidator.check('event_feed', await body());
    if (options.lastEventId !== undefined) request.after = options.lastEventId;
    await call.recheck();
    await call.admitPage();
    steps = streamReads(services, call, ctx, request, options);
    step = await steps.next();
  } catch (error) {
    const rate = call.refund();
    call.letGoOfMemory();
    return { error, rate };
  }
  sink.open();
  try {
    while (!step.done) {
      const value = step.value;
      if ('page' in value) {
        const { bytes, taken } = sink.write(value.page);
        call.settleAnswer(bytes);
        services.metrics?.pageServed('event_feed', 'http', bytes);
        if (!(await taken)) return;
        // Taken by the client: its memory goes back before the next read admits its own.
        call.letGoOfMemory();
      } else sink.idle();
      step = await steps.next();
    }
    sink.end();
  } catch (error) {
    if (call.ended && !call.revoked) return;
    sink.fail(error);
  } finally {
    call.letGoOfMemory();
    await steps.return(undefined);
  }
  return undefined;
}
