import type { ErrorObject } from 'ajv';

/**
 * One clear sentence from Ajv's first error, naming the field. The same function serves HTTP and
 * MCP, so both say exactly the same thing for the same input.
 */
export function describeValidationErrors(errors: readonly ErrorObject[] | null | undefined, operationId: string): string {
  const all = errors ?? [];
  const error = pickMostSpecific(all);
  if (!error) return 'request body does not match the contract';
  const field = fieldName(error.instancePath);
  const parent = error.parentSchema as { minimum?: number; maximum?: number; type?: string; properties?: object } | undefined;

  switch (error.keyword) {
    case 'additionalProperties': {
      const name = (error.params as { additionalProperty: string }).additionalProperty;
      const allowed = Object.keys((error.schema === false && parent?.properties) || {});
      const where = field ? ` in ${field}` : '';
      const accepted = allowed.length ? `: ${field || operationId} accepts only ${allowed.map((n) => `"${n}"`).join(', ')}` : '';
      return `unknown parameter "${truncate(name)}"${where}${accepted}`;
    }
    case 'required':
      return `missing required parameter "${joinField(field, (error.params as { missingProperty: string }).missingProperty)}"`;
    case 'type':
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
    case 'multipleOf':
      if (parent && parent.minimum !== undefined && parent.maximum !== undefined) {
        const kind = parent.type === 'integer' ? 'an integer' : 'a number';
        return `${field || 'body'} must be ${kind} between ${parent.minimum} and ${parent.maximum}`;
      }
      return `${field || 'request body'} ${error.message}`;
    case 'enum':
      return `${field} must be one of ${((error.params as { allowedValues: unknown[] }).allowedValues ?? []).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'format': {
      // A oneOf of a constant and a format (feed_cursor's `at`: "now" or a date-time): name both.
      const constant = all.find((e) => e.keyword === 'const' && e.instancePath === error.instancePath);
      const or = constant ? `${JSON.stringify((constant.params as { allowedValue: unknown }).allowedValue)} or ` : '';
      return `${field} must be ${or}a valid ${(error.params as { format: string }).format}`;
    }
    case 'uniqueItems': {
      // Ajv names the pair in an order that depends on how the schema was compiled: fix it.
      const { i, j } = error.params as { i: number; j: number };
      return `${field} must not repeat an item (items ${Math.min(i, j)} and ${Math.max(i, j)} are the same)`;
    }
    case 'const': {
      // One `const` per oneOf branch (EmitEventRequest: one branch per `type`): name every value the branches accept.
      const values = all
        .filter((e) => e.keyword === 'const' && e.instancePath === error.instancePath)
        .map((e) => JSON.stringify((e.params as { allowedValue: unknown }).allowedValue));
      return values.length > 1
        ? `${field || 'request body'} must be one of ${values.join(', ')}`
        : `${field || 'request body'} must be ${values[0]}`;
    }
    case 'pattern':
      return `${field} is not in the expected form (${(error.params as { pattern: string }).pattern})`;
    default:
      return `${field || 'request body'} ${error.message}`;
  }
}

/**
 * `if` and `oneOf` errors only say that some branch failed; the errors under them are the useful
 * ones. A oneOf branch whose `const` does not match (EmitEventRequest has one branch per `type`) is a
 * branch that does not apply: when another error exists, it is the one that says what is wrong.
 */
function pickMostSpecific(errors: readonly ErrorObject[]): ErrorObject | undefined {
  const useful = errors.filter((e) => e.keyword !== 'if' && e.keyword !== 'oneOf');
  const applicable = useful.filter((e) => e.keyword !== 'const');
  return (applicable.length ? applicable : useful).sort((a, b) => depth(b.instancePath) - depth(a.instancePath))[0];
}

const depth = (path: string) => path.split('/').length;

/** `/requestBody/subject/refs/mailbox_id` → `subject.refs.mailbox_id` */
function fieldName(instancePath: string): string {
  return instancePath
    .replace(/^\/requestBody/, '')
    .split('/')
    .filter(Boolean)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

const joinField = (parent: string, child: string) => (parent ? `${parent}.${child}` : child);
const truncate = (text: string) => (text.length > 60 ? `${text.slice(0, 60)}…` : text);
