/**
 * The contract says which fields are personal (`x-personal`), the generator lists them per event
 * type (PERSONAL_FIELDS) and refuses a personal-looking field left unannotated, so that a new event
 * type cannot forget one; and a redacted event of every type is still valid against its schema.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PERSONAL_FIELDS, PERSONAL_REDACTION } from '../generated/personal-fields.ts';
import { readEventTypes } from '../scripts/generate-event-types.ts';
import { personalFieldsByType } from '../scripts/generate-personal-fields.ts';
import { redactEnvelope } from '../src/erasure/redact.ts';
import { ERASED_ADDRESS, ERASED_TEXT, shown } from '../src/http/view/erased.ts';
import { contractErrors } from './support/contract.ts';

const ROOT = join(import.meta.dirname, '..');
const read = (file: string) => JSON.parse(readFileSync(join(ROOT, 'schemas', file), 'utf8')) as Record<string, any>;
const types = readEventTypes(ROOT);

describe('personal fields', () => {
  it('lists, for every event type, the subject and the addresses of its data', () => {
    assert.deepEqual(Object.keys(PERSONAL_FIELDS).sort(), types.map((t) => t.type).sort());
    for (const [type, fields] of Object.entries(PERSONAL_FIELDS)) {
      const paths = fields.map((f) => f.path.join('.'));
      assert.ok(paths.includes('subject.person.email'), type);
      assert.ok(paths.includes('subject.person.name'), type);
      assert.ok(
        fields.some((f) => f.kind === 'email' && f.path[0] === 'data'),
        `${type} has an address in its data`,
      );
    }
    assert.ok(PERSONAL_FIELDS['mail.received']!.some((f) => f.path.join('.') === 'data.cc.*.email'));
  });

  it('refuses an event type whose data has a personal-looking field without x-personal', () => {
    for (const planted of [
      { reply_to: { type: 'string', format: 'email' } },
      { sender_name: { type: 'string', maxLength: 100 } },
      { contact: { type: 'object', properties: { email: { type: 'string' } } } },
    ]) {
      const reader = (file: string) => {
        const schema = read(file);
        return file === 'data/mail-received.schema.json' ? { ...schema, properties: { ...schema.properties, ...planted } } : schema;
      };
      assert.throws(() => personalFieldsByType(ROOT, types, reader), /looks personal but has no x-personal/, JSON.stringify(planted));
    }
    // Annotated, the same field is listed; `none` says it was looked at and is not personal.
    const annotated = (file: string) => {
      const schema = read(file);
      return file === 'data/mail-received.schema.json'
        ? {
            ...schema,
            properties: {
              ...schema.properties,
              reply_to: { type: 'string', 'x-personal': 'email' },
              list_name: { type: 'string', 'x-personal': 'none' },
            },
          }
        : schema;
    };
    const fields = personalFieldsByType(ROOT, types, annotated)['mail.received']!.map((f) => f.path.join('.'));
    assert.ok(fields.includes('data.reply_to'));
    assert.ok(!fields.includes('data.list_name'));
  });

  it('redacts an example of every type into an envelope still valid against its schema', () => {
    const envelope = read('event-envelope.template.json').examples[0];
    for (const entry of types) {
      const data = read(entry.data).examples[0];
      const event = { ...envelope, type: entry.type, data };
      assert.equal(contractErrors('EventEnvelope', event), null, entry.type);
      const address = (event.subject.person.email as string).toUpperCase();
      const redacted = redactEnvelope(JSON.stringify(event), new Set([address.toLowerCase()]));
      assert.ok(redacted, entry.type);
      const parsed = JSON.parse(redacted);
      assert.equal(contractErrors('EventEnvelope', parsed), null, `${entry.type}: ${redacted}`);
      assert.equal(parsed.subject.person.email, PERSONAL_REDACTION.email);
      assert.equal(parsed.id, event.id);
      assert.ok(!redacted.toLowerCase().includes(address.toLowerCase()), redacted);
      assert.equal(
        redactEnvelope(JSON.stringify(event), new Set(['nobody@exemple.fr'])),
        undefined,
        'an event without the address is left alone',
      );
    }
  });

  it("the web view shows the contract's redaction as « effacé »", () => {
    assert.equal(ERASED_ADDRESS, PERSONAL_REDACTION.email);
    assert.equal(ERASED_TEXT, PERSONAL_REDACTION.name);
    assert.equal(ERASED_TEXT, PERSONAL_REDACTION.text);
    assert.equal(shown(PERSONAL_REDACTION.email), '« effacé »');
    assert.equal(shown(PERSONAL_REDACTION.name), '« effacé »');
    assert.equal(shown(`550 5.1.1 ${PERSONAL_REDACTION.text}`), '550 5.1.1 « effacé »');
    assert.equal(shown('claire.dubois@exemple.fr'), 'claire.dubois@exemple.fr');
  });
});
