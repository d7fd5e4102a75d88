import type { ValidateFunction } from 'ajv';
import { createAjv } from '../../src/contract/ajv.ts';
import { loadSpec } from '../../src/contract/spec.ts';

const spec = loadSpec();
const ajv = createAjv();
ajv.addSchema({ components: spec.components }, 'contract');
const cache = new Map<string, ValidateFunction>();

/** Validates a body against a schema component of the published contract; returns Ajv's errors or null. */
export function contractErrors(component: string, body: unknown): unknown[] | null {
  let validate = cache.get(component);
  if (!validate) {
    validate = ajv.compile({ $ref: `contract#/components/schemas/${component}` });
    cache.set(component, validate);
  }
  return validate(body) ? null : (validate.errors ?? []);
}

/** Emit requests that are valid for each type, for tests to vary. */
export function sampleEvent(mailboxId: string | undefined = 'mbx_sales', n = 0) {
  return {
    type: 'mail.received' as const,
    subject: {
      person: { email: `client${n}@example.fr`, name: `Client ${n}` },
      refs: mailboxId ? { mailbox_id: mailboxId, message_id: `msg_${n}`, thread_id: `thr_${n}` } : {},
    },
    data: {
      internet_message_id: `<m${n}@example.fr>`,
      from: { email: `client${n}@example.fr` },
      to: [{ email: 'ventes@atelier.fr' }],
      subject_line: `Commande ${n}`,
      size_bytes: 1200 + n,
      attachment_count: 0,
      spam_score: 0.5,
      spam_verdict: 'pass' as const,
    },
  };
}

/**
 * A valid mail.received of ~63 KB (175 recipients with long display names, a 998-character
 * subject line): under the 64 KiB body limit, and a page of 500 of them is ~31 MB.
 */
export function largeEvent(mailboxId: string | undefined = 'mbx_sales', n = 0) {
  const event = sampleEvent(mailboxId, n);
  const to = Array.from({ length: 175 }, (_, i) => ({
    email: `destinataire.${n}.${i}.${'x'.repeat(40)}@exemple.fr`,
    name: `Destinataire ${i} ${'Ê'.repeat(120)}`.slice(0, 256),
  }));
  return { ...event, data: { ...event.data, to, subject_line: `${n} ${'S'.repeat(998)}`.slice(0, 998) } };
}
