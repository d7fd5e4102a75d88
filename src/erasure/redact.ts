import { PERSONAL_FIELDS, PERSONAL_REDACTION, type PersonalField } from '../../generated/personal-fields.ts';
import { normalAddress } from './addresses.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** The values an erased field takes (the contract's `x-personal-redaction`): same type, valid where the field was. */
export const ERASED = PERSONAL_REDACTION;

/**
 * An envelope's text with the person of `addresses` (normalised, normalAddress) erased, or
 * undefined when it carries none of them (left byte for byte as stored). In an event that carries
 * one of the addresses, by the contract's personal fields of its type (PERSONAL_FIELDS):
 * - every `email` field holding one of them becomes ERASED.email, and the `name` beside it (in
 *   the same object) ERASED.name; other people's addresses and names stay;
 * - every `text` field (a subject line, an SMTP diagnostic: words that may quote the person)
 *   becomes ERASED.text, after the SMTP reply code it starts with if any ("550 5.1.1 [erased]");
 *   a `name` with no address beside it becomes ERASED.name.
 * Key order and everything else are kept: ids, types, times and refs are not personal.
 */
export function redactEnvelope(envelope: string, addresses: ReadonlySet<string>): string | undefined {
  const event = JSON.parse(envelope) as JsonObject;
  const fields = PERSONAL_FIELDS[event.type as string];
  if (!fields) return undefined;
  const holders = new Set<JsonObject>();
  for (const field of fields.filter((f) => f.kind === 'email')) {
    for (const { parent, key } of places(event, field)) {
      const value = parent[key];
      if (typeof value === 'string' && addresses.has(normalAddress(value))) {
        parent[key] = ERASED.email;
        holders.add(parent);
      }
    }
  }
  if (holders.size === 0) return undefined;
  for (const field of fields.filter((f) => f.kind !== 'email')) {
    for (const { parent, key } of places(event, field)) {
      if (typeof parent[key] !== 'string') continue;
      const besideAnAddress = fields.some((f) => f.kind === 'email' && sameParent(f, field) && typeof parent[f.path.at(-1)!] === 'string');
      if (field.kind === 'text') parent[key] = erasedText(parent[key] as string);
      else if (holders.has(parent) || !besideAnAddress) parent[key] = ERASED.name;
    }
  }
  return JSON.stringify(event);
}

// An SMTP reply's code and enhanced status ("550 5.1.1"): not personal, and what a reply's schema requires it to start with.
const SMTP_CODE = /^\d{3}(?: \d\.\d{1,3}\.\d{1,3})?(?= |$)/;

/** A free text erased: ERASED.text, after the SMTP reply code it started with, if any. */
const erasedText = (text: string) => {
  const code = SMTP_CODE.exec(text)?.[0];
  return code === undefined ? ERASED.text : `${code} ${ERASED.text}`;
};

const sameParent = (a: PersonalField, b: PersonalField) =>
  a.path.length === b.path.length && a.path.slice(0, -1).every((part, i) => part === b.path[i]);

/** Every object and key a field's path reaches in `root` (`*`: each item of an array). */
function places(root: JsonObject, field: PersonalField): Array<{ parent: JsonObject; key: string }> {
  let parents: Json[] = [root];
  const path = field.path;
  for (const part of path.slice(0, -1)) {
    const next: Json[] = [];
    for (const node of parents) {
      if (part === '*') {
        if (Array.isArray(node)) next.push(...node);
      } else if (node && typeof node === 'object' && !Array.isArray(node) && part in node) next.push(node[part]!);
    }
    parents = next;
  }
  const key = path.at(-1)!;
  return parents
    .filter((node): node is JsonObject => !!node && typeof node === 'object' && !Array.isArray(node) && key in node)
    .map((parent) => ({ parent, key }));
}
