/**
 * generated/asyncapi.json (and .yaml): the AsyncAPI 3 document of what the service sends (webhook
 * deliveries, the event stream), from asyncapi.yaml, the bundled OpenAPI document and the event
 * types' list, so that the two documents share every schema and every type:
 * - `{Type}` in a map key or a list item repeats it once per event type ({Type}: MailBounced,
 *   {type}: mail.bounced, {description}: the type's English text);
 * - `#/components/schemas/<Name>` refers to the contract's component of that name, copied with
 *   every component it refers to, as an AsyncAPI schema (a JSON Schema draft-07 superset: an
 *   OpenAPI `discriminator` object becomes its property name, `$schema` and `x-` keys go);
 * - info.version, contact and license (its name) are openapi.yaml's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { EventTypeEntry } from './generate-event-types.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);
const SCHEMA_REF = '#/components/schemas/';
const PLACEHOLDER = '{Type}';

const pascalOf = (type: string) =>
  type
    .split(/[._]/)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');

/** `value` with the placeholders filled for one type. */
function fill(value: Json, t: EventTypeEntry): Json {
  if (typeof value === 'string')
    return value.replaceAll(PLACEHOLDER, pascalOf(t.type)).replaceAll('{type}', t.type).replaceAll('{description}', t.description);
  if (Array.isArray(value)) return value.map((item) => fill(item, t));
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [fill(key, t) as string, fill(child, t)]));
}

const holdsPlaceholder = (value: Json) => JSON.stringify(value).includes(PLACEHOLDER);

/** Repeats each key and list item that holds `{Type}` once per type, in the list's order. */
function expand(value: Json, types: EventTypeEntry[]): Json {
  if (Array.isArray(value))
    return value.flatMap((item) => (holdsPlaceholder(item) ? types.map((t) => expand(fill(item, t), types)) : [expand(item, types)]));
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    if (key.includes(PLACEHOLDER)) for (const t of types) out[fill(key, t) as string] = expand(fill(child, t), types);
    else out[key] = expand(child, types);
  }
  return out;
}

/** An OpenAPI 3.1 schema as an AsyncAPI schema. */
function asAsyncApiSchema(value: Json): Json {
  if (Array.isArray(value)) return value.map(asAsyncApiSchema);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === '$schema' || key.startsWith('x-')) continue;
    if (key === 'discriminator' && isObject(child)) out[key] = child.propertyName!;
    else if (key === 'properties' && isObject(child))
      out[key] = Object.fromEntries(Object.entries(child).map(([name, schema]) => [name, asAsyncApiSchema(schema)]));
    else out[key] = asAsyncApiSchema(child);
  }
  return out;
}

function schemaRefs(value: Json, into: Set<string>): Set<string> {
  if (Array.isArray(value)) value.forEach((item) => schemaRefs(item, into));
  else if (isObject(value)) {
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' && typeof child === 'string' && child.startsWith(SCHEMA_REF)) into.add(child.slice(SCHEMA_REF.length));
      else schemaRefs(child, into);
    }
  }
  return into;
}

export function asyncApiDocument(root: string, openapi: JsonObject, types: EventTypeEntry[]): JsonObject {
  const source = parseYaml(readFileSync(join(root, 'asyncapi.yaml'), 'utf8')) as JsonObject;
  const doc = expand(source, types) as JsonObject;
  const info = openapi.info as JsonObject;
  // AsyncAPI's license has a name and a url, not OpenAPI 3.1's SPDX identifier.
  const { identifier: _spdx, ...license } = info.license as JsonObject;
  doc.info = { ...(doc.info as JsonObject), version: info.version!, contact: info.contact!, license };

  const contract = (openapi.components as JsonObject).schemas as JsonObject;
  const components = doc.components as JsonObject;
  const own = (components.schemas ?? {}) as JsonObject;
  // Every contract schema the document reaches, in the contract's order, after the document's own.
  const wanted = new Set<string>();
  const reach = (name: string) => {
    if (wanted.has(name) || name in own) return;
    const schema = contract[name];
    if (schema === undefined) throw new Error(`asyncapi.yaml: ${SCHEMA_REF}${name} is neither its own schema nor one of the contract's`);
    wanted.add(name);
    for (const ref of schemaRefs(schema, new Set())) reach(ref);
  };
  for (const ref of schemaRefs(doc, new Set())) reach(ref);
  const schemas: JsonObject = { ...own };
  for (const name of Object.keys(contract)) if (wanted.has(name)) schemas[name] = asAsyncApiSchema(contract[name]!);
  components.schemas = schemas;
  return doc;
}
