/**
 * The event types are declared once, in schemas/event-types.json, with their French labels; `npm
 * run generate` derives every other place that names them. Each derived place is checked here
 * against that list, so a type missing from any of them (a stale generation, a hand edit) fails:
 * the contract's EventTypeFilter pattern, the branches and discriminators of
 * EventEnvelope and EmitEventRequest, the components of the bundled contract, the labels the MCP
 * text and the web view use.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { EVENT_LABELS_FR, EVENT_TYPES } from '../generated/event-types.ts';
import { loadSpec } from '../src/contract/spec.ts';
import { typeBreakdown } from '../src/mcp/text/french.ts';

interface Entry {
  type: string;
  data: string;
  label_fr: { heading: string; inline: string };
}

const source: Entry[] = JSON.parse(readFileSync(new URL('../schemas/event-types.json', import.meta.url), 'utf8')).types;
const declared = source.map((entry) => entry.type);
const schemas = loadSpec().components.schemas;
const component = (ref: string) => schemas[ref.replace('#/components/schemas/', '')];

describe('event types: one list, every derived place', () => {
  it('the list declares at least one type, each once, each with a data schema and both French labels', () => {
    assert.ok(declared.length > 0);
    assert.equal(new Set(declared).size, declared.length);
    for (const entry of source) {
      assert.ok(entry.label_fr.heading && entry.label_fr.inline, entry.type);
      const data = JSON.parse(readFileSync(new URL(`../schemas/${entry.data}`, import.meta.url), 'utf8'));
      assert.equal(typeof data.title, 'string', entry.data);
    }
  });

  it("each type's branches describe it, and the contract has no list of types of its own to fall behind", () => {
    assert.equal(schemas.EventType, undefined);
    for (const [i, entry] of source.entries()) {
      const branch = schemas[schemas.EventEnvelope.oneOf[i].$ref.split('/').pop()];
      assert.ok(branch.description.includes(`\`${entry.type}\``), entry.type);
    }
  });

  for (const [union, template] of [
    ['EventEnvelope', 'event-envelope'],
    ['EmitEventRequest', 'emit-event-request'],
  ] as const) {
    it(`${union} has one complete branch per type, each with its type's constant and its data schema, and the discriminator maps each type to its branch`, () => {
      const branches: Array<{ $ref: string }> = schemas[union].oneOf;
      assert.deepEqual(
        branches.map((branch) => component(branch.$ref).properties.type.const),
        declared,
      );
      const fields = JSON.parse(readFileSync(new URL(`../schemas/${template}.template.json`, import.meta.url), 'utf8'));
      for (const [i, branch] of branches.entries()) {
        const schema = component(branch.$ref);
        // Complete: every field of the template, closed, nothing pulled in through allOf.
        assert.deepEqual(Object.keys(schema.properties), Object.keys(fields.properties), branch.$ref);
        assert.deepEqual(schema.required, fields.required, branch.$ref);
        assert.equal(schema.additionalProperties, false, branch.$ref);
        assert.equal(schema.allOf, undefined, branch.$ref);
        const data = component(schema.properties.data.$ref);
        const file = JSON.parse(readFileSync(new URL(`../schemas/${source[i]!.data}`, import.meta.url), 'utf8'));
        assert.equal(data.title, file.title, `${declared[i]}: its branch takes its data schema`);
      }
      const { propertyName, mapping } = schemas[union].discriminator;
      assert.equal(propertyName, 'type');
      assert.deepEqual(Object.keys(mapping), declared);
      for (const [type, ref] of Object.entries<string>(mapping)) assert.equal(component(ref).properties.type.const, type, ref);
    });
  }

  it('no schema of the contract pulls a union in through allOf (client generators misread it)', () => {
    const pulls = (value: unknown): boolean =>
      Array.isArray(value)
        ? value.some(pulls)
        : typeof value === 'object' &&
          value !== null &&
          Object.entries(value).some(
            ([key, child]) =>
              (key === 'allOf' && Array.isArray(child) && child.some((s: { $ref?: string }) => s.$ref && component(s.$ref).oneOf)) ||
              pulls(child),
          );
    for (const [name, schema] of Object.entries(schemas)) assert.equal(pulls(schema), false, name);
  });

  it('EventTypeFilter accepts exactly the types and the mail.* prefix', () => {
    const pattern = new RegExp(schemas.EventTypeFilter.pattern);
    for (const type of declared) assert.ok(pattern.test(type), type);
    assert.ok(pattern.test('mail.*'));
    const alternatives = /\((.*)\)/
      .exec(schemas.EventTypeFilter.pattern)![1]!
      .split('|')
      .filter((a) => a !== '\\*');
    assert.deepEqual(
      alternatives.map((a) => `mail.${a.replace(/\\\./g, '.')}`),
      declared,
    );
  });

  it('the MCP text names every type by its inline label', () => {
    assert.deepEqual([...EVENT_TYPES], declared);
    assert.deepEqual(Object.keys(EVENT_LABELS_FR), declared);
    for (const entry of source) {
      assert.deepEqual(EVENT_LABELS_FR[entry.type as keyof typeof EVENT_LABELS_FR], entry.label_fr, entry.type);
      assert.equal(typeBreakdown({ types: [entry.type], occurredAtMs: [0] }), `- ${entry.type} (${entry.label_fr.inline}) : 1`);
    }
  });

  it('the web view titles every type by its heading, from the generated labels and no table of its own', async () => {
    // Loaded as the browser loads it: a plain module, no types.
    const { EVENT_HEADINGS_FR } = await import(new URL('../generated/event-labels.js', import.meta.url).href);
    assert.deepEqual(EVENT_HEADINGS_FR, Object.fromEntries(source.map((entry) => [entry.type, entry.label_fr.heading])));
    // The view's TypeScript (bundled into /view.js): its labels module imports the served labels, and no module names a type itself.
    const viewDir = new URL('../src/http/view/', import.meta.url);
    const modules = readdirSync(viewDir).filter((name) => name.endsWith('.ts'));
    assert.ok(modules.includes('labels.ts'), 'the view has a labels module');
    assert.match(readFileSync(new URL('labels.ts', viewDir), 'utf8'), /import \{ EVENT_HEADINGS_FR \} from '\/event-labels\.js';/);
    for (const name of modules) {
      const view = readFileSync(new URL(name, viewDir), 'utf8');
      for (const entry of source) assert.ok(!view.includes(`'${entry.type}'`), `the view's ${name} names ${entry.type} itself`);
    }
  });
});
