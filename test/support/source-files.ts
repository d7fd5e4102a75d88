/**
 * The TypeScript files under a folder of the repository, parsed (syntax only, no type-check: quick
 * enough for the fast loop). The architecture test reads imports, identifiers and strings from the
 * syntax tree rather than with regular expressions, so a comment that names `dbKind` or quotes an
 * SQL keyword is not taken for code.
 */

import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type TS from 'typescript';

/** Loaded with require: through tsx's ESM loader the compiler's one large file loads much more slowly, and the architecture test belongs to the fast loop. */
export const ts: typeof TS = createRequire(import.meta.url)('typescript');

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface SourceFile {
  /** Path from the repository root, with forward slashes: `src/store/db.ts`. */
  path: string;
  tree: TS.SourceFile;
}

export interface ImportEdge {
  from: string;
  to: string;
  line: number;
  /** `import type` / `export type`: no run-time dependency, but a dependency of the design all the same. */
  typeOnly: boolean;
}

const toPosix = (path: string) => path.split(sep).join('/');

export function readSourceFiles(folder: string): SourceFile[] {
  return readdirSync(join(repoRoot, folder), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => toPosix(relative(repoRoot, join(entry.parentPath, entry.name))))
    .sort()
    .map((path) => parseSource(path, readFileSync(join(repoRoot, path), 'utf8')));
}

/** One file's text, parsed as if it were at `path` (the tests of the checks themselves use made-up files). */
export const parseSource = (path: string, text: string): SourceFile => ({
  path,
  tree: ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true),
});

/** 1-based line of a node, for messages a reader can jump to. */
export const lineOf = (file: SourceFile, node: TS.Node) => file.tree.getLineAndCharacterOfPosition(node.getStart(file.tree)).line + 1;

/** Every node of a file, depth first. */
export function* nodesOf(file: SourceFile): Generator<TS.Node> {
  const stack: TS.Node[] = [file.tree];
  while (stack.length > 0) {
    const node = stack.pop()!;
    yield node;
    const children: TS.Node[] = [];
    ts.forEachChild(node, (child) => void children.push(child));
    stack.push(...children.reverse());
  }
}

/**
 * The file's relative imports, resolved to repository paths: static imports, re-exports,
 * `import()` and `typeof import()`. Package imports (`knex`, `node:fs`) are left out.
 */
export function importsOf(file: SourceFile): ImportEdge[] {
  const edges: ImportEdge[] = [];
  const add = (specifier: TS.Node | undefined, node: TS.Node, typeOnly: boolean) => {
    if (!specifier || !ts.isStringLiteralLike(specifier) || !specifier.text.startsWith('.')) return;
    const to = toPosix(relative(repoRoot, resolve(repoRoot, dirname(file.path), specifier.text)));
    edges.push({ from: file.path, to, line: lineOf(file, node), typeOnly });
  };
  for (const node of nodesOf(file)) {
    if (ts.isImportDeclaration(node)) add(node.moduleSpecifier, node, isTypeOnlyImport(node));
    else if (ts.isExportDeclaration(node)) add(node.moduleSpecifier, node, node.isTypeOnly);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0], node, false);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal, node, true);
  }
  return edges;
}

function isTypeOnlyImport(node: TS.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false; // `import './x.ts'`: run for its effects
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  return (
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((element) => element.isTypeOnly)
  );
}
