import { readFileSync } from 'node:fs';
import { packageFile } from '../paths.ts';

/** The bundled contract (generated/openapi.json): what the edges route and validate by, and what we publish. */
export const specPath = packageFile('generated/openapi.json');
export const specYamlPath = packageFile('openapi.yaml');
export const specText = readFileSync(specPath, 'utf8');

// Each user gets its own copy: Ajv and the readers may annotate what they are given.
export const loadSpec = (): Record<string, any> => JSON.parse(specText);
