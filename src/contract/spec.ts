import { readFileSync } from 'node:fs';
import { packageFile } from '../base/paths.ts';

/** The bundled contract (generated/openapi.json): what the edges route and validate by, and what we publish. */
export const specPath = packageFile('generated/openapi.json');
/** The same document as YAML, self-contained (openapi.yaml, its source, refers to files under schemas/). */
export const specYamlPath = packageFile('generated/openapi.yaml');
/** What the service sends (webhook deliveries, the event stream), as AsyncAPI 3: served, never read by the service. */
export const asyncApiPath = packageFile('generated/asyncapi.json');
export const asyncApiYamlPath = packageFile('generated/asyncapi.yaml');
export const specText = readFileSync(specPath, 'utf8');

// Each user gets its own copy: Ajv and the readers may annotate what they are given.
export const loadSpec = (): Record<string, any> => JSON.parse(specText);
