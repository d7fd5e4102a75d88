/**
 * The event types are named in a few places of the contract that JSON Schema cannot derive from
 * one another: the `EventType` enum, the `EventTypeFilter` pattern, and `MailEvent`'s branches
 * (one per type, with its `type` constant and the discriminator's mapping). They must agree.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadSpec } from '../src/contract/spec.ts';

const schemas = loadSpec().components.schemas;
const component = (ref: string) => schemas[ref.replace('#/components/schemas/', '')];

describe('event types in the contract', () => {
  const enumTypes: string[] = schemas.EventType.enum;

  it("MailEvent has one branch per EventType, each with its type's constant, and the discriminator maps each type to its branch", () => {
    const branches: Array<{ $ref: string }> = schemas.MailEvent.oneOf;
    const constants = branches.map((branch) => component(branch.$ref).properties.type.const);
    assert.deepEqual([...constants].sort(), [...enumTypes].sort());
    const { propertyName, mapping } = schemas.MailEvent.discriminator;
    assert.equal(propertyName, 'type');
    assert.deepEqual(Object.keys(mapping).sort(), [...enumTypes].sort());
    for (const [type, ref] of Object.entries<string>(mapping)) assert.equal(component(ref).properties.type.const, type, ref);
  });

  it('the envelope and the emit request both take their type-dependent data from MailEvent', () => {
    for (const name of ['EventEnvelope', 'EmitEventRequest']) {
      assert.deepEqual(schemas[name].allOf, [{ $ref: '#/components/schemas/MailEvent' }], name);
      assert.equal(schemas[name].additionalProperties, false, name);
    }
  });

  it('EventTypeFilter accepts exactly the types and the mail.* prefix', () => {
    const pattern = new RegExp(schemas.EventTypeFilter.pattern);
    for (const type of enumTypes) assert.ok(pattern.test(type), type);
    assert.ok(pattern.test('mail.*'));
    const alternatives = /\((.*)\)/.exec(schemas.EventTypeFilter.pattern)![1]!.split('|').filter((a) => a !== '\\*');
    assert.deepEqual(alternatives.map((a) => `mail.${a}`).sort(), [...enumTypes].sort());
  });
});
