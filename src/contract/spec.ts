import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The bundled contract (generated/openapi.json): what openapi-backend routes by and what we publish. */
export const specPath = fileURLToPath(new URL('../../generated/openapi.json', import.meta.url));
export const specYamlPath = fileURLToPath(new URL('../../openapi.yaml', import.meta.url));
export const specText = readFileSync(specPath, 'utf8');

// The document is mutable for openapi-backend; hand each user its own copy.
export const loadSpec = (): Record<string, any> => JSON.parse(specText);
