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
  const component = (ref: string): Json => {
    if (!ref.startsWith(COMPONENT_REF)) throw new Error(`unexpected ref ${ref}`);
    const target = components[ref.slice(COMPONENT_REF.length)];
    if (target === undefined) throw new Error(`unresolved ref ${ref}`);
    return target;
  };

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
      out[key] = key === 'properties' && isObject(child) ? Object.fromEntries(Object.entries(child).map(([name, schema]) => [name, convert(schema)])) : convert(child);
    }
    // The most specific French text wins: the one next to a $ref over the component's own.
    if (typeof value['x-description-fr'] === 'string') out.description = value['x-description-fr'];
    return Array.isArray(out.type) ? nullableAsAnyOf(out) : out;
  };
  const schema = convert(root) as JsonObject;
  return Object.keys(defs).length ? { ...schema, $defs: defs } : schema;
}

/** `{type: [T, "null"], …}` as `{anyOf: [{type: T, …}, {type: "null"}]}`, its description kept on the whole. */
function nullableAsAnyOf(schema: JsonObject): JsonObject {
  const types = schema.type as Json[];
  const others = types.filter((type) => type !== 'null');
  if (types.length !== 2 || others.length !== 1 || typeof others[0] !== 'string') {
    throw new Error(`type ${JSON.stringify(types)}: only a nullable single type ([T, "null"]) has a portable MCP form; write the others as oneOf in the contract`);
  }
  const { description, type: _type, ...constraints } = schema;
  if ('enum' in constraints || 'const' in constraints) throw new Error('a nullable enum or const has no portable form here: write it as oneOf in the contract');
  return { ...(description === undefined ? {} : { description }), anyOf: [{ type: others[0], ...constraints }, { type: 'null' }] };
}
