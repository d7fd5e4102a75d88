/** What publishing one event answers: emit_event's response body and the library's publish() both come from it. */
export interface PublishedEvent {
  /** The envelope's JSON text, as stored and as every reader will get it. */
  envelope: string;
  /** false when a client-supplied id was already stored for the same event (an idempotent replay, sameEvent). */
  created: boolean;
}
