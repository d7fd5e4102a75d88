import { readFileSync } from 'node:fs';
import { packageFile } from '../paths.ts';

/** The bundled contract (generated/openapi.json): what openapi-backend routes by and what we publish. */
export const specPath = packageFile('generated/openapi.json');
export const specYamlPath = packageFile('openapi.yaml');
export const specText = readFileSync(specPath, 'utf8');

// The document is mutable for openapi-backend; hand each user its own copy.
export const loadSpec = (): Record<string, any> => JSON.parse(specText);
