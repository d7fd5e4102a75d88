/**
 * generated/personal-fields.ts: per event type, where its envelope holds personal data, read from
 * the contract's `x-personal` annotations (`email`: an address, `name`: a display name, `text`: free
 * text that may quote the person, such as a subject line or an SMTP diagnostic; `none`: looked at,
 * not personal). The erasure of a person (erase_person) redacts exactly these paths.
 *
 * So that a new event type cannot forget one, the generator refuses a string field that looks
 * personal (an `email` format, or a name such as `recipient`, `sender`, `reply_to`, `display_name`,
 * `subject_line`) and carries no `x-personal` (personalFieldsOf throws, naming the field).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { EventTypeEntry } from './generate-event-types.ts';

export type PersonalKind = 'email' | 'name' | 'text';
const KINDS = new Set(['email', 'name', 'text', 'none']);

/** One personal field: its path from the envelope's root (`*`: every item of an array). */
export interface PersonalField {
  path: string[];
  kind: PersonalKind;
}

/** Names that say "a person's address, name or words": each such string field must be annotated. */
const PERSONAL_LIKE =
  /(^|_)(e?mail|emails|address|addresses|name|names|recipient|recipients|sender|senders|from|to|cc|bcc|reply_to|subject|phone|display)(_|$)/i;

type Schema = Record<string, unknown>;
/** Reads a schema file of the contract by its path (tests plant a schema through it). */
export type SchemaReader = (file: string) => Schema;

const fileReader =
  (root: string): SchemaReader =>
  (file) =>
    JSON.parse(readFileSync(join(root, 'schemas', file), 'utf8')) as Schema;

/**
 * The personal fields under `schema` (read from `file`, relative to schemas/), with `prefix` as
 * their path so far. Throws on a personal-looking string field without `x-personal`.
 */
export function personalFieldsOf(read: SchemaReader, file: string, schema: Schema, prefix: string[]): PersonalField[] {
  const ref = schema.$ref;
  if (typeof ref === 'string') {
    const target = join(dirname(file), ref);
    return personalFieldsOf(read, target, read(target), prefix);
  }
  const found: PersonalField[] = [];
  const name = prefix.filter((part) => part !== '*').at(-1) ?? '';
  const annotation = schema['x-personal'];
  if (annotation !== undefined) {
    if (typeof annotation !== 'string' || !KINDS.has(annotation))
      throw new Error(`schemas/${file}: ${prefix.join('.')} has x-personal "${String(annotation)}" (email, name, text or none)`);
    if (annotation !== 'none') found.push({ path: prefix, kind: annotation as PersonalKind });
  } else if (schema.type === 'string' && (schema.format === 'email' || PERSONAL_LIKE.test(name))) {
    throw new Error(
      `schemas/${file}: ${prefix.join('.')} looks personal but has no x-personal (email, name, text, or none when it is not personal)`,
    );
  }
  const properties = schema.properties as Record<string, Schema> | undefined;
  for (const [key, value] of Object.entries(properties ?? {})) found.push(...personalFieldsOf(read, file, value, [...prefix, key]));
  if (schema.items && typeof schema.items === 'object')
    found.push(...personalFieldsOf(read, file, schema.items as Schema, [...prefix, '*']));
  for (const keyword of ['oneOf', 'anyOf', 'allOf'] as const) {
    for (const branch of (schema[keyword] as Schema[] | undefined) ?? []) found.push(...personalFieldsOf(read, file, branch, prefix));
  }
  return found;
}

/** The personal fields of every event type: the envelope's subject, then its data. */
export function personalFieldsByType(
  root: string,
  types: EventTypeEntry[],
  read: SchemaReader = fileReader(root),
): Record<string, PersonalField[]> {
  const subject = personalFieldsOf(read, 'subject.schema.json', read('subject.schema.json'), ['subject']);
  const byType: Record<string, PersonalField[]> = {};
  for (const entry of types) byType[entry.type] = [...subject, ...personalFieldsOf(read, entry.data, read(entry.data), ['data'])];
  return byType;
}

/** The values erased fields take, from the contract's `x-personal-redaction` (openapi.yaml's info). */
function redaction(root: string): Record<PersonalKind, string> {
  const doc = parseYaml(readFileSync(join(root, 'openapi.yaml'), 'utf8')) as { info?: Record<string, unknown> };
  const values = doc.info?.['x-personal-redaction'] as Record<string, unknown> | undefined;
  for (const kind of ['email', 'name', 'text'] as const) {
    if (typeof values?.[kind] !== 'string') throw new Error(`openapi.yaml: info.x-personal-redaction lacks "${kind}"`);
  }
  return values as Record<PersonalKind, string>;
}

export function personalFieldsModule(root: string, types: EventTypeEntry[], banner: string): string {
  const byType = personalFieldsByType(root, types);
  const values = redaction(root);
  return `${banner}/** Where each event type's envelope holds personal data (\`x-personal\` in the contract): \`*\` is every item of an array. */
export type PersonalKind = 'email' | 'name' | 'text';

export interface PersonalField {
  readonly path: readonly string[];
  readonly kind: PersonalKind;
}

/** What an erased field holds, by kind (\`x-personal-redaction\`). */
export const PERSONAL_REDACTION = ${JSON.stringify(values, null, 2)} as const;

export const PERSONAL_FIELDS: Readonly<Record<string, readonly PersonalField[]>> = ${JSON.stringify(byType, null, 2)};
`;
}
