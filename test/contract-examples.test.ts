/**
 * The published contract shows every operation by example: a request (when it takes a body) and
 * an answer for every documented status, success and errors; and every example is one the
 * contract's own schemas accept, so a reader can trust them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAjv } from '../src/contract/ajv.ts';
import { loadSpec } from '../src/contract/spec.ts';

const spec = loadSpec();
const ajv = createAjv();
// The whole document as one schema resource, so that any schema in it can be compiled by pointer.
ajv.addSchema({ components: spec.components, paths: spec.paths, webhooks: spec.webhooks }, 'served');

const escape = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'];

interface Operation {
  label: string;
  pointer: string;
  operation: Record<string, any>;
}

function operations(): Operation[] {
  const out: Operation[] = [];
  for (const section of ['paths', 'webhooks'] as const) {
    for (const [key, item] of Object.entries<Record<string, any>>(spec[section] ?? {})) {
      for (const method of HTTP_METHODS) {
        if (item[method])
          out.push({ label: `${section} ${key} ${method}`, pointer: `/${section}/${escape(key)}/${method}`, operation: item[method] });
      }
    }
  }
  return out;
}

/** A media type's examples, by name (`example` counts as one named "example"). */
function examplesOf(media: Record<string, any>): Array<[string, unknown]> {
  const named = Object.entries<{ value: unknown }>(media.examples ?? {}).map(
    ([name, example]) => [name, example.value] as [string, unknown],
  );
  return media.example === undefined ? named : [...named, ['example', media.example]];
}

/** A response object and the pointer to it, following one $ref to components.responses. */
function resolveResponse(pointer: string, response: Record<string, any>): [string, Record<string, any>] {
  if (typeof response.$ref !== 'string') return [pointer, response];
  const name = response.$ref.split('/').pop()!;
  return [`/components/responses/${escape(name)}`, spec.components.responses[name]];
}

function checkExamples(label: string, mediaPointer: string, media: Record<string, any>): number {
  const examples = examplesOf(media);
  const validate = ajv.compile({ $ref: `served#${mediaPointer}/schema` });
  for (const [name, value] of examples) {
    assert.ok(validate(value), `${label}, example "${name}": ${JSON.stringify(validate.errors)}`);
  }
  return examples.length;
}

describe('examples in the published contract', () => {
  const all = operations();

  it('covers the operations of both sections', () => {
    assert.ok(all.length >= 6, all.map((o) => o.label).join(', '));
    assert.ok(
      all.some((o) => o.pointer.startsWith('/webhooks/')),
      'the webhooks section is checked too',
    );
  });

  for (const { label, pointer, operation } of all) {
    it(`${label}: a valid example for its request body and for every response with a body`, () => {
      const body = operation.requestBody?.content?.['application/json'];
      if (body)
        assert.ok(
          checkExamples(`${label} request`, `${pointer}/requestBody/content/application~1json`, body) > 0,
          `${label}: a request example`,
        );
      const statuses = Object.keys(operation.responses ?? {});
      let successExamples = 0;
      for (const status of statuses) {
        const [responsePointer, response] = resolveResponse(`${pointer}/responses/${escape(status)}`, operation.responses[status]);
        const media = response.content?.['application/json'];
        // A stream's success (text/event-stream) is one example of its frames: the AsyncAPI document validates its messages.
        if (!media) {
          if (status.startsWith('2') && typeof response.content?.['text/event-stream']?.example === 'string') successExamples++;
          continue;
        }
        const count = checkExamples(`${label} ${status}`, `${responsePointer}/content/application~1json`, media);
        assert.ok(count > 0, `${label} ${status}: an example answer`);
        if (status.startsWith('2')) successExamples += count;
      }
      for (const [i, parameter] of (operation.parameters ?? []).entries()) {
        if (parameter.example === undefined) continue;
        const validate = ajv.compile({ $ref: `served#${pointer}/parameters/${i}/schema` });
        assert.ok(validate(parameter.example), `${label} ${parameter.name} example: ${JSON.stringify(validate.errors)}`);
      }
      if (pointer.startsWith('/paths/')) assert.ok(successExamples > 0, `${label}: an example of success`);
      // An operation that takes a key documents the main refusals (each with its example, above).
      if (operation['x-permission']) {
        const main = [...(operation.requestBody ? ['400'] : []), '401', '403', '429', '500'];
        for (const status of main) assert.ok(statuses.includes(status), `${label}: documents ${status}`);
      }
    });
  }

  it('every example inside a schema component is valid against it', () => {
    for (const [name, schema] of Object.entries<Record<string, any>>(spec.components.schemas)) {
      const validate = ajv.compile({ $ref: `served#/components/schemas/${escape(name)}` });
      for (const [i, example] of (schema.examples ?? []).entries()) {
        assert.ok(validate(example), `${name} example ${i}: ${JSON.stringify(validate.errors)}`);
      }
    }
  });
});
