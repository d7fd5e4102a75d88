import type { ValidateFunction } from 'ajv';
import type { OperationId, Operations } from '../../generated/operations.ts';
import { invalidArgument } from '../base/errors.ts';
import { createAjv } from './ajv.ts';
import { loadSpec } from './spec.ts';
import { describeValidationErrors } from './validation-errors.ts';

/**
 * Validates an operation's request body against the contract, for every entry point (HTTP, MCP
 * tools, the library): one compiled schema per operation, the same verdicts, the same messages.
 */
export class RequestValidator {
  readonly #validators = new Map<OperationId, ValidateFunction>();

  constructor() {
    const spec = loadSpec();
    const ajv = createAjv();
    ajv.addSchema({ components: spec.components }, 'contract');
    for (const pathItem of Object.values<Record<string, any>>(spec.paths)) {
      for (const operation of Object.values<any>(pathItem)) {
        const ref: string | undefined = operation?.requestBody?.content?.['application/json']?.schema?.$ref;
        if (operation?.operationId && ref) {
          this.#validators.set(operation.operationId as OperationId, ajv.compile({ $ref: `contract${ref}` }));
        }
      }
    }
  }

  /** The body as the operation's typed request, or an invalid_argument error saying what is wrong. */
  check<Id extends OperationId>(operationId: Id, body: unknown): Operations[Id]['request'] {
    const validate = this.#validators.get(operationId);
    if (!validate) throw new Error(`no request schema for operation ${operationId}`);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw invalidArgument('request body must be a JSON object');
    }
    if (!validate(body)) throw invalidArgument(describeValidationErrors(validate.errors, operationId));
    return body as Operations[Id]['request'];
  }
}
