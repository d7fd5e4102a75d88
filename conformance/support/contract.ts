import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { APIRequestContext } from '@playwright/test';

/** The deployment's own published contract (/openapi.json), and a validator for its components. */
export async function publishedContract(request: APIRequestContext) {
  const response = await request.get('/openapi.json');
  if (response.status() !== 200) throw new Error(`/openapi.json answered ${response.status()}`);
  const spec = await response.json();
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajvFormats.default(ajv);
  ajv.addSchema({ components: spec.components }, 'contract');
  return {
    spec,
    validator: (component: string) => ajv.compile({ $ref: `contract#/components/schemas/${component}` }),
    /** A validator for a schema that stands alone (an MCP tool's, say). */
    compile: (schema: object) => ajv.compile(schema),
  };
}
