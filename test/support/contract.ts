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
      spam_verdict: 'pass',
    },
  };
}
