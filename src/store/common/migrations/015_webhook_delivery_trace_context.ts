import type { Knex } from 'knex';

/*
 * The trace context of the emit that queued a delivery (a W3C traceparent, null when tracing was
 * off), kept with its outbox row: each attempt's span joins the emit's trace, however late or
 * often it is sent, and the receiver gets a traceparent of that trace.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.text('trace_context').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropColumn('trace_context');
  });
}
