import { Ajv2020, type Options } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';

// ajv-formats is CommonJS: under ESM its plugin is the module's `default` member.
const addFormats = ajvFormats.default;

/**
 * The one JSON Schema validator of the service (draft 2020-12, formats checked): HTTP, the MCP
 * tools and the library validate with it (RequestValidator), so every entry point
 * gives the same verdict and the same message.
 */
// strictNumbers: JSON.parse turns 1e400 into Infinity, which plain Ajv accepts as a number and JSON.stringify
// then stores as null: refuse it like any other non-finite value.
export const AJV_OPTIONS: Options = { strict: false, allErrors: false, verbose: true, strictNumbers: true };

export function createAjv(): Ajv2020 {
  const ajv = new Ajv2020(AJV_OPTIONS);
  addFormats(ajv);
  return ajv;
}
