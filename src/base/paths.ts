import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// This file is <root>/src/base/paths.ts, or <root>/dist/src/base/paths.js once built (npm run build).
const srcDir = dirname(dirname(fileURLToPath(import.meta.url)));
const parent = dirname(srcDir);

/** The package's folder, whether the service runs from its sources or from dist/. */
export const ROOT = basename(parent) === 'dist' ? dirname(parent) : parent;

/** A file of the package by its path from the root (`generated/openapi.json`). */
export const packageFile = (path: string) => join(ROOT, path);
