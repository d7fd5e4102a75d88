/**
 * A contract schema as an MCP tool carries it. An assistant pays for tools/list in every
 * conversation, so the schema keeps every constraint but says it once, and only in French:
 * - a component used more than once goes to `$defs` and is referenced (`#/$defs/Name`), when the
 *   caller allows refs (output schemas, which clients only use to validate); input schemas are
 *   inlined, since some assistants' tool-calling front ends do not follow refs;
 * - descriptions are the French ones (`x-description-fr`) and only those: the English
 *   `description`s, `title`s and examples serve the HTTP reference, not the tool;
 * - `discriminator` goes (its mapping points into components/, and the `type` constants of the
 *   oneOf branches already say which branch applies), as do `$schema` and every `x-` key;
 * - a union of complete schemas that differ in a few properties (EventEnvelope: one branch per event
 *   type, alike but for `type` and `data`) says what they share once, and in each branch only what
 *   sets it apart (factorUnion): the same documents pass, for a fraction of the text;
 * - a nullable value, `type: [T, "null"]` in the contract, becomes `anyOf: [{type: T, …}, {type:
 *   "null"}]`: some assistants map tool schemas onto a dialect with a single `type` (Gemini's
 *   function declarations) and refuse or loosen a type array; the MCP Inspector's `--strict`
 *   check names it. The same values validate either way.
 */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

const DROPPED = new Set(['description', 'title', 'examples', 'example', '$schema', 'discriminator', 'x-description-fr']);
const COMPONENT_REF = '#/components/schemas/';

export function mcpSchema(components: JsonObject, root: Json, options: { refs: boolean }): Json {
  const lookup = (ref: string): Json => {
    if (!ref.startsWith(COMPONENT_REF)) throw new Error(`unexpected ref ${ref}`);
    const target = components[ref.slice(COMPONENT_REF.length)];
    if (target === undefined) throw new Error(`unresolved ref ${ref}`);
    return target;
  };
  const component = (ref: string): Json => factorUnion(lookup(ref), lookup);

  // How many times each component appears once everything is inlined.
  const uses = new Map<string, number>();
  const count = (value: Json): void => {
    if (Array.isArray(value)) return value.forEach(count);
    if (!isObject(value)) return;
    if (typeof value.$ref === 'string') {
      uses.set(value.$ref, (uses.get(value.$ref) ?? 0) + 1);
      count(component(value.$ref));
    }
    for (const [key, child] of Object.entries(value)) if (key !== '$ref') count(child);
  };
  count(root);

  const defs: JsonObject = {};
  const convert = (value: Json): Json => {
    if (Array.isArray(value)) return value.map(convert);
    if (!isObject(value)) return value;
    const out: JsonObject = {};
    if (typeof value.$ref === 'string') {
      const name = value.$ref.slice(COMPONENT_REF.length);
      if (options.refs && (uses.get(value.$ref) ?? 0) > 1) {
        if (!(name in defs)) {
          defs[name] = {}; // reserved first: the order of $defs follows first use
          defs[name] = convert(component(value.$ref));
        }
        out.$ref = `#/$defs/${name}`;
      } else {
        Object.assign(out, convert(component(value.$ref)));
      }
    }
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' || DROPPED.has(key) || key.startsWith('x-')) continue;
      out[key] =
        key === 'properties' && isObject(child)
          ? Object.fromEntries(Object.entries(child).map(([name, schema]) => [name, convert(schema)]))
          : convert(child);
    }
    // The most specific French text wins: the one next to a $ref over the component's own.
    if (typeof value['x-description-fr'] === 'string') out.description = value['x-description-fr'];
    return Array.isArray(out.type) ? nullableAsAnyOf(out) : out;
  };
  const schema = convert(root) as JsonObject;
  return Object.keys(defs).length ? { ...schema, $defs: defs } : schema;
}

/** What an object schema's own texts are: they stay with a branch, or are said once for all. */
const TEXTS = ['title', 'description', 'x-description-fr'];
/**
 * What a differing property's branches may share, said once: its texts and its `type` (so the
 * shared schema still says what the value is: an untyped `{}` is what the Inspector's strict mode
 * calls constraining nothing). Never keywords whose meaning depends on their siblings
 * (`additionalProperties` beside `properties`…), which must stay with the branch.
 */
const SHARED = [...TEXTS, 'type'];
const same = (a: Json | undefined, b: Json | undefined) => JSON.stringify(a) === JSON.stringify(b);

/**
 * A `oneOf` of references to closed object schemas with the same property names and the same
 * `required` (the per-type branches the generator writes), as one closed object: the properties
 * alike in every branch, once; each branch keeps only the properties that differ (their common
 * texts said once too). It accepts exactly what the union accepts. Anything else is left as it is.
 */
function factorUnion(schema: Json, lookup: (ref: string) => Json): Json {
  if (!isObject(schema) || !Array.isArray(schema.oneOf) || schema.oneOf.length < 2) return schema;
  const branches = schema.oneOf.map((branch) => (isObject(branch) && typeof branch.$ref === 'string' ? lookup(branch.$ref) : undefined));
  const shape = (branch: JsonObject): Json => [
    branch.type ?? null,
    branch.additionalProperties ?? null,
    branch.required ?? null,
    Object.keys(branch.properties as JsonObject),
  ];
  const [first] = branches;
  if (!isObject(first) || first.type !== 'object' || first.additionalProperties !== false || !isObject(first.properties)) return schema;
  if (
    !branches.every((branch): branch is JsonObject => isObject(branch) && isObject(branch.properties) && same(shape(branch), shape(first)))
  )
    return schema;
  const propertiesOf = (branch: JsonObject) => branch.properties as JsonObject;
  const properties: JsonObject = {};
  const differing: string[] = [];
  for (const [name, property] of Object.entries(first.properties)) {
    if (branches.every((branch) => same(propertiesOf(branch)[name], property))) {
      properties[name] = property;
      continue;
    }
    differing.push(name);
    // A branch's property may be a reference (a type's data schema): its keywords are the referenced schema's.
    const keywordsOf = (branch: JsonObject): JsonObject => {
      const own = propertiesOf(branch)[name] as JsonObject;
      const target = typeof own.$ref === 'string' ? lookup(own.$ref) : undefined;
      return { ...(isObject(target) ? target : {}), ...own };
    };
    const mine = keywordsOf(first);
    const shared = SHARED.filter((key) => key in mine && branches.every((branch) => same(keywordsOf(branch)[key], mine[key])));
    properties[name] = Object.fromEntries(shared.map((key) => [key, mine[key]!]));
  }
  const oneOf = branches.map((branch) => ({
    ...Object.fromEntries(TEXTS.filter((key) => key in branch).map((key) => [key, branch[key]!])),
    properties: Object.fromEntries(
      differing.map((name) => {
        const own = propertiesOf(branch)[name] as JsonObject;
        return [name, Object.fromEntries(Object.entries(own).filter(([key]) => !(key in (properties[name] as JsonObject))))];
      }),
    ),
  }));
  const { oneOf: _branches, discriminator: _discriminator, ...rest } = schema;
  return { ...rest, type: 'object', additionalProperties: false, required: first.required!, properties, oneOf };
}

/** `{type: [T, "null"], …}` as `{anyOf: [{type: T, …}, {type: "null"}]}`, its description kept on the whole. */
function nullableAsAnyOf(schema: JsonObject): JsonObject {
  const types = schema.type as Json[];
  const others = types.filter((type) => type !== 'null');
  if (types.length !== 2 || others.length !== 1 || typeof others[0] !== 'string') {
    throw new Error(
      `type ${JSON.stringify(types)}: only a nullable single type ([T, "null"]) has a portable MCP form; write the others as oneOf in the contract`,
    );
  }
  const { description, type: _type, ...constraints } = schema;
  if ('enum' in constraints || 'const' in constraints)
    throw new Error('a nullable enum or const has no portable form here: write it as oneOf in the contract');
  return { ...(description === undefined ? {} : { description }), anyOf: [{ type: others[0], ...constraints }, { type: 'null' }] };
}
