import type { EmitEventRequest } from '../../generated/types.ts';
import { forbidden } from '../base/errors.ts';
import type { PublishedEvent } from '../feed/published-event.ts';
import type { OperationContext } from './context.ts';

/** emit_event: appends one event to the caller's workspace feed; idempotent on a client-supplied id. */
export async function emitEvent(ctx: OperationContext<'write'>, input: EmitEventRequest): Promise<PublishedEvent> {
  const { mailboxes, workspaceId } = ctx.principal;
  if (mailboxes !== null) {
    const mailbox = input.subject.refs.mailbox_id;
    if (mailbox === undefined || !mailboxes.includes(mailbox)) {
      throw forbidden('this key is restricted to some mailboxes: subject.refs.mailbox_id must be one of them');
    }
  }
  return ctx.groupCommit.append(workspaceId, input);
}

/** The response body `{ "event": <envelope> }`, spliced from the stored text. */
export const emitEventJson = (published: PublishedEvent) => `{"event":${published.envelope}}`;
