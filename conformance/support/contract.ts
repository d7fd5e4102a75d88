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
    /** A component with refs inlined, without `$schema` and examples: how MCP tools carry it. */
    inlined: (component: string) => inline(spec.components.schemas[component], spec.components.schemas),
  };
}

/** A schema with refs to `components` inlined, without `$schema` and examples. */
export function inline(value: any, components: Record<string, any>): any {
  if (Array.isArray(value)) return value.map((v) => inline(v, components));
  if (value === null || typeof value !== 'object') return value;
  if (typeof value.$ref === 'string') return inline(components[value.$ref.split('/').pop()], components);
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => !['$schema', 'examples', 'example'].includes(k))
      .map(([k, v]) => [k, inline(v, components)]),
  );
}
