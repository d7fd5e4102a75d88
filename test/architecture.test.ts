/**
 * The layout's rules (issue 20; ARCHITECTURE.md says why), checked on every run of
 * `npm run test:unit` so that a change which wears a boundary down fails at once with the file and
 * line that did it, rather than being found by the next review. Each rule lists every violation it
 * finds, not only the first. The source is parsed (TypeScript's parser, no type-check), not
 * searched with patterns, so comments that name an identifier or quote SQL are not taken for code.
 * Every import rule ARCHITECTURE.md states is one entry of IMPORT_RULES, each with a violation
 * planted in a made-up file that its self-test sees caught.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type TS from 'typescript';
import { commentPathsOf, namesAFile, namesASourceFile } from './support/comment-paths.ts';
import { importCycles } from './support/import-cycles.ts';
import { importsOf, lineOf, nodesOf, parseSource, readSourceFiles, ts, type ImportEdge, type SourceFile } from './support/source-files.ts';

const files = readSourceFiles('src');
const edges = files.flatMap(importsOf);
const inFolder = (path: string, folder: string) => path.startsWith(`src/${folder}/`);
const outsideStore = files.filter((file) => !inFolder(file.path, 'store'));
const showEdge = (edge: ImportEdge) => `${edge.from}:${edge.line} imports ${edge.typeOnly ? 'type(s) from ' : ''}${edge.to}`;

function assertNone(violations: string[], rule: string): void {
  assert.equal(violations.length, 0, `${rule}: ${violations.length} violation(s)\n  ${violations.join('\n  ')}`);
}

/**
 * The comments of src/ and client/src/ that may still give a `.ts` file's name, each with why: a
 * path the code resolves at run time, not a pointer for the reader (those name the symbol).
 */
const COMMENT_PATHS_ALLOWED: Array<{ file: string; name: string; why: string }> = [
  { file: 'src/base/paths.ts', name: '/src/base/paths.ts', why: 'where the module itself sits at run time: ROOT is derived from it' },
];

/** The `.ts` file names the file's comments give, but for those `allowed`, each as a violation. */
function sourceFilesNamedIn(file: SourceFile, allowed = COMMENT_PATHS_ALLOWED): string[] {
  return commentPathsOf(file)
    .filter(({ name }) => namesASourceFile(name) && !allowed.some((entry) => entry.file === file.path && entry.name === name))
    .map(({ name, line }) => `${file.path}:${line} names ${name}: name the symbol meant instead`);
}

/**
 * An import rule: an import from a file `from` matches of a file `forbidden` matches is a
 * violation. `planted` is an import that breaks it (a made-up file and what it imports) and
 * `allowed` one of the same file that does not: the self-test sees the first caught and not the second.
 */
interface ImportRule {
  rule: string;
  from: (path: string) => boolean;
  forbidden: (path: string) => boolean;
  planted: { file: string; imports: string };
  allowed: { file: string; imports: string };
}

const under =
  (...folders: string[]) =>
  (path: string) =>
    folders.some((folder) => inFolder(path, folder));

/** The adapter folders: each folder of src/store/ holding an adapter.ts (common/ holds the interface they implement). */
const ADAPTER_FOLDERS = files
  .flatMap((file) => /^src\/store\/([^/]+)\/adapter\.ts$/.exec(file.path)?.[1] ?? [])
  .filter((folder) => folder !== 'common');
const inAnAdapter = (path: string) => ADAPTER_FOLDERS.some((folder) => path.startsWith(`src/store/${folder}/`));

/** What contract/ may import: the generated files and src/base/, below everything. */
const belowContract = (path: string) => path.startsWith('generated/') || inFolder(path, 'contract') || inFolder(path, 'base');

/** ARCHITECTURE.md's "Import rules", one entry each (besides the circles, SQL and the client's folder, tested below). */
const IMPORT_RULES: ImportRule[] = [
  {
    rule: 'src/store/common/ imports no database kind folder (src/store/<kind>/): it holds only what both databases share',
    from: (path) => path.startsWith('src/store/common/'),
    forbidden: inAnAdapter,
    planted: { file: 'src/store/common/migrations/made-up.ts', imports: '../../postgres/partitions.ts' },
    allowed: { file: 'src/store/common/migrations/made-up.ts', imports: '../weeks.ts' },
  },
  {
    rule: 'src/tracing/ imports nothing of the service (the store, feed/, the edges and webhooks/ call it)',
    from: under('tracing'),
    forbidden: (path) => path.startsWith('src/') && !inFolder(path, 'tracing'),
    planted: { file: 'src/tracing/made-up.ts', imports: '../store/port.ts' },
    allowed: { file: 'src/tracing/made-up.ts', imports: './spans.ts' },
  },
  {
    rule: 'src/store/ imports nothing from the layers above it (feed/, auth/, webhooks/, operations/, the edges, app/, metrics/, cli/, demo/)',
    from: under('store'),
    forbidden: under(
      'feed',
      'auth',
      'webhooks',
      'operations',
      'http',
      'mcp',
      'oauth',
      'calls',
      'front-door',
      'app',
      'metrics',
      'cli',
      'demo',
    ),
    planted: { file: 'src/store/common/made-up.ts', imports: '../../feed/cursor.ts' },
    allowed: { file: 'src/store/common/made-up.ts', imports: '../../contract/spec.ts' },
  },
  {
    rule: 'src/http/ does not import src/mcp/',
    from: under('http'),
    forbidden: under('mcp'),
    planted: { file: 'src/http/made-up.ts', imports: '../mcp/tools.ts' },
    allowed: { file: 'src/http/made-up.ts', imports: '../calls/call.ts' },
  },
  {
    rule: 'src/mcp/ does not import src/http/',
    from: under('mcp'),
    forbidden: under('http'),
    planted: { file: 'src/mcp/made-up.ts', imports: '../http/edge.ts' },
    allowed: { file: 'src/mcp/made-up.ts', imports: '../calls/call.ts' },
  },
  {
    rule: 'src/operations/ imports no edge (http/, mcp/, oauth/, front-door/), no call (calls/) and not the wiring above them (app/)',
    from: under('operations'),
    forbidden: under('http', 'mcp', 'oauth', 'front-door', 'calls', 'app'),
    planted: { file: 'src/operations/made-up.ts', imports: '../calls/call.ts' },
    allowed: { file: 'src/operations/made-up.ts', imports: '../feed/cursor.ts' },
  },
  {
    rule: 'src/operations/, src/feed/ and src/webhooks/ do not import src/metrics/: the edges count, and observers they are given',
    from: under('operations', 'feed', 'webhooks'),
    forbidden: under('metrics'),
    planted: { file: 'src/feed/made-up.ts', imports: '../metrics/metrics.ts' },
    allowed: { file: 'src/feed/made-up.ts', imports: './cursor.ts' },
  },
  {
    rule: 'src/contract/ imports only generated/, its own folder and src/base/: nothing from the layers above',
    from: under('contract'),
    forbidden: (path) => !belowContract(path),
    planted: { file: 'src/contract/made-up.ts', imports: '../auth/principal.ts' },
    allowed: { file: 'src/contract/made-up.ts', imports: '../../generated/types.ts' },
  },
  {
    rule: 'nothing outside src/store/ imports an adapter folder (src/store/<kind>/): the store alone opens a database',
    from: (path) => !inFolder(path, 'store'),
    forbidden: inAnAdapter,
    planted: { file: 'src/feed/made-up.ts', imports: '../store/postgres/page.ts' },
    allowed: { file: 'src/feed/made-up.ts', imports: '../store/port.ts' },
  },
];

const violationsOf = (rule: ImportRule, among: ImportEdge[]) =>
  among.filter((edge) => rule.from(edge.from) && rule.forbidden(edge.to)).map(showEdge);
const importing = ({ file, imports }: { file: string; imports: string }) =>
  importsOf(parseSource(file, `import { made } from '${imports}';\n`));

describe('architecture', () => {
  // Once every rule passes, a scan that saw nothing would pass too: these two keep the checks honest.
  test('the scan sees the source: it finds src/ files and their imports', () => {
    assert.ok(
      files.some((file) => file.path === 'src/server.ts'),
      'src/server.ts not found: the scan is looking in the wrong place',
    );
    assert.ok(
      edges.some((edge) => edge.from === 'src/server.ts'),
      'no import found in src/server.ts: the import scan is broken',
    );
  });

  test('the checks catch what they look for, and not a comment about it', () => {
    const made = parseSource(
      'src/feed/made-up.ts',
      [
        "import { dbKind } from '../store/db.ts';",
        "import type { Page } from './page.ts';",
        "export { x } from '../mcp/tools.ts';",
        '// dbKind(db) and SELECT * FROM events, in a comment only',
        "const rows = await db('events').where({ seq: 1 });",
        "await trx.raw('vacuum');",
        'const sql = `SELECT seq FROM events WHERE seq > ${after}`;',
        "const label = 'Select the events to update';",
        'if (dbKind(db) === "postgres") {}',
      ].join('\n'),
    );
    assert.deepEqual(
      importsOf(made).map(({ to, line, typeOnly }) => ({ to, line, typeOnly })),
      [
        { to: 'src/store/db.ts', line: 1, typeOnly: false },
        { to: 'src/feed/page.ts', line: 2, typeOnly: true },
        { to: 'src/mcp/tools.ts', line: 3, typeOnly: false },
      ],
    );
    assert.deepEqual(
      linesWhere(made, (node) => ts.isIdentifier(node) && node.text === 'dbKind'),
      [1, 9],
    );
    assert.deepEqual(
      sqlIn(made).map(({ line }) => line),
      [5, 6, 7],
    );
    const edge = (from: string, to: string) => ({ from, to, line: 1, typeOnly: false });
    const [cycle, ...more] = importCycles([edge('a', 'b'), edge('b', 'c'), edge('c', 'a'), edge('c', 'd'), edge('d', 'd')]);
    assert.deepEqual(cycle?.example, ['a', 'b', 'c', 'a']);
    assert.deepEqual(
      more.map((other) => other.files),
      [['d']],
      'a file importing itself is a circle too',
    );
  });

  test('each import rule catches the import planted against it, and not an allowed one', () => {
    assert.deepEqual([...ADAPTER_FOLDERS].sort(), ['postgres', 'sqlite'], 'the adapter folders are found by their adapter.ts');
    for (const rule of IMPORT_RULES) {
      assert.equal(
        violationsOf(rule, importing(rule.planted)).length,
        1,
        `${rule.rule}: the planted ${rule.planted.file} → ${rule.planted.imports} is not caught`,
      );
      assert.deepEqual(
        violationsOf(rule, importing(rule.allowed)),
        [],
        `${rule.rule}: the allowed ${rule.allowed.file} → ${rule.allowed.imports} is caught`,
      );
    }
  });

  test('no import circle anywhere in src/ (type-only imports count: they tie the design together too)', () => {
    const violations = importCycles(edges).map(
      (cycle) =>
        `circle of ${cycle.files.length} file(s), e.g. ${cycle.example.join(' → ')}; its imports:\n      ${cycle.edges.map(showEdge).join('\n      ')}`,
    );
    assertNone(violations, 'import circles');
  });

  for (const rule of IMPORT_RULES) {
    test(rule.rule, () => assertNone(violationsOf(rule, edges), rule.rule));
  }

  test('in src/ and client/src/, a comment names the symbol meant, never a .ts file (which a move leaves behind)', () => {
    const planted = parseSource(
      'src/store/postgres/made-up.ts',
      "// see edge/call.ts and gone/away.ts, better Call.open (SharedReads)\nconst path = 'nowhere.ts'; /* writes dist/view/view.js, per openapi.yaml */\n",
    );
    assert.deepEqual(
      sourceFilesNamedIn(planted),
      [
        'src/store/postgres/made-up.ts:1 names edge/call.ts: name the symbol meant instead',
        'src/store/postgres/made-up.ts:1 names gone/away.ts: name the symbol meant instead',
      ],
      'a file name is caught, existing or not, in src/store/ too; a symbol, a string, a build output and the contract are not',
    );
    const allowed = parseSource('src/made-up.ts', '// This file is <root>/src/made-up.ts at run time\n');
    assert.deepEqual(sourceFilesNamedIn(allowed, [{ file: 'src/made-up.ts', name: '/src/made-up.ts', why: 'a run-time path' }]), []);

    const scanned = [...files, ...readSourceFiles('client/src')];
    assertNone(
      scanned.flatMap((file) => sourceFilesNamedIn(file)),
      'comments naming a source file',
    );
    const stale = COMMENT_PATHS_ALLOWED.filter(
      (entry) => !scanned.some((file) => file.path === entry.file && commentPathsOf(file).some(({ name }) => name === entry.name)),
    ).map((entry) => `${entry.file} no longer names ${entry.name}: drop it from COMMENT_PATHS_ALLOWED`);
    assertNone(stale, 'COMMENT_PATHS_ALLOWED entries that allow nothing');
  });

  test('in scripts/, bench/ and conformance/, a comment that names a file names one that exists (better: it names the symbol)', () => {
    const made = parseSource(
      'src/http/made-up.ts',
      "// see edge/call.ts, send-json.ts and gone/away.ts\nconst path = 'nowhere.ts'; /* and store/feed-page.ts */\n",
    );
    assert.deepEqual(commentPathsOf(made), [
      { name: 'edge/call.ts', line: 1 },
      { name: 'send-json.ts', line: 1 },
      { name: 'gone/away.ts', line: 1 },
      { name: 'store/feed-page.ts', line: 2 },
    ]);
    const existing = new Set(['src/edge/call.ts', 'src/http/send-json.ts', 'conformance/support/seed.ts']);
    const has = (path: string) => existing.has(path);
    assert.deepEqual(
      commentPathsOf(made)
        .filter(({ name }) => !namesAFile(made.path, name, has))
        .map(({ name }) => name),
      ['gone/away.ts', 'store/feed-page.ts'],
    );
    assert.ok(namesAFile('conformance/api/x.spec.ts', 'support/seed.ts', has), 'a name from a folder above the comment');

    // Tools and programs: some name the file they start or write (`startFloorServer('floor-server.ts')`,
    // generated/operations.ts), which is a path, not a pointer. dist/ and node_modules/ are not ours.
    const scanned = [...readSourceFiles('scripts'), ...readSourceFiles('bench'), ...readSourceFiles('conformance')].filter(
      (file) => !/\/(dist|node_modules)\//.test(file.path),
    );
    const violations = scanned.flatMap((file) =>
      commentPathsOf(file)
        .filter(({ name }) => !namesAFile(file.path, name))
        .map(({ name, line }) => `${file.path}:${line} names ${name}`),
    );
    assertNone(violations, 'comments naming files that do not exist');
  });

  test('no SQL outside src/store/: no raw SQL, no knex table call, no SQL statement in a string', () => {
    const violations = outsideStore.flatMap((file) => sqlIn(file).map(({ line, what }) => `${file.path}:${line} ${what}`));
    assertNone(violations, 'SQL outside src/store/');
  });

  test("the web view (src/http/view/) is a browser program apart: its own modules, the served labels and the contract's types only; nothing of the server imports it", () => {
    assert.ok(
      files.some((file) => file.path === `${VIEW}main.ts`),
      `${VIEW}main.ts not found`,
    );
    assertNone(viewImportViolations(files), "imports across the web view's border");
  });

  test("the web view's rule catches what it looks for", () => {
    const view = parseSource(
      `${VIEW}made-up.ts`,
      [
        "import { ui } from './dom.ts';",
        "import type { components } from '../../../client/src/generated/api.ts';",
        "import { EVENT_HEADINGS_FR } from '/event-labels.js';",
        "import { components as values } from '../../../client/src/generated/api.ts';",
        "import { createClient } from '../../../client/src/client.ts';",
        "import { readFileSync } from 'node:fs';",
        "import { packageFile } from '../../paths.ts';",
        "const later = await import('./rows.ts');",
      ].join('\n'),
    );
    const server = parseSource(
      'src/http/made-up-router.ts',
      "import { ui } from './view/dom.ts';\nimport { viewScript } from './view-bundle.ts';",
    );
    assert.deepEqual(viewImportViolations([view, server]), [
      `${VIEW}made-up.ts:4 imports client/src/generated/api.ts`,
      `${VIEW}made-up.ts:5 imports client/src/client.ts`,
      `${VIEW}made-up.ts:7 imports src/paths.ts`,
      `${VIEW}made-up.ts:6 imports the package node:fs`,
      `src/http/made-up-router.ts:1 imports ${VIEW}dom.ts`,
    ]);
  });

  test('the typed client (client/src/) imports nothing outside its folder: it is packed and installed alone', () => {
    const client = readSourceFiles('client/src');
    assert.ok(
      client.some((file) => file.path === 'client/src/index.ts'),
      'client/src/index.ts not found',
    );
    const violations = client
      .flatMap(importsOf)
      .filter((edge) => !edge.to.startsWith('client/src/'))
      .map(showEdge);
    assertNone(violations, 'client/src/ imports from outside it');
  });
});

/** The web view's folder: TypeScript for the browser, bundled into /view.js (src/http/view-bundle.ts). */
const VIEW = 'src/http/view/';
/** The contract's types, generated for the typed client: the view's requests and answers are typed by them. */
const CONTRACT_TYPES = 'client/src/generated/api.ts';
/** The event types' labels, generated from the contract's list of types and served on their own. */
const SERVED_LABELS = '/event-labels.js';

/**
 * The view runs in a page, alone: it may import its own modules, the labels the service serves
 * (SERVED_LABELS, kept out of the bundle) and, for types only, CONTRACT_TYPES (erased: nothing of the
 * client runs in the page). No package, nothing of the server; and the server imports none of it
 * (it serves the bundle, made from the folder by path).
 */
function viewImportViolations(sources: SourceFile[]): string[] {
  const view = sources.filter((file) => file.path.startsWith(VIEW));
  const outward = view
    .flatMap(importsOf)
    .filter((edge) => !edge.to.startsWith(VIEW) && !(edge.to === CONTRACT_TYPES && edge.typeOnly))
    .map((edge) => `${edge.from}:${edge.line} imports ${edge.to}`);
  const packages = view.flatMap((file) =>
    nonRelativeImports(file)
      .filter(({ specifier }) => specifier !== SERVED_LABELS)
      .map(({ specifier, line }) => `${file.path}:${line} imports the package ${specifier}`),
  );
  const inward = sources
    .filter((file) => !file.path.startsWith(VIEW))
    .flatMap(importsOf)
    .filter((edge) => edge.to.startsWith(VIEW))
    .map((edge) => `${edge.from}:${edge.line} imports ${edge.to}`);
  return [...outward, ...packages, ...inward];
}

/** A file's imports that importsOf leaves out: packages (`node:fs`, `esbuild`) and absolute paths (`/event-labels.js`). */
function nonRelativeImports(file: SourceFile): Array<{ specifier: string; line: number }> {
  const found: Array<{ specifier: string; line: number }> = [];
  for (const node of nodesOf(file)) {
    const specifier =
      ts.isImportDeclaration(node) || ts.isExportDeclaration(node)
        ? node.moduleSpecifier
        : ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword
          ? node.arguments[0]
          : undefined;
    if (specifier && ts.isStringLiteralLike(specifier) && !specifier.text.startsWith('.'))
      found.push({ specifier: specifier.text, line: lineOf(file, node) });
  }
  return found;
}

/** Distinct lines of the file holding a node that matches. */
function linesWhere(file: SourceFile, matches: (node: TS.Node) => boolean): number[] {
  const lines = new Set<number>();
  for (const node of nodesOf(file)) if (matches(node)) lines.add(lineOf(file, node));
  return [...lines].sort((a, b) => a - b);
}

/** The names a knex instance or transaction goes by in this code base, called with a table name: `db('api_keys')`. */
const QUERY_BUILDERS = new Set(['knex', 'db', 'trx', 'tx', 'exec']);
/** An SQL statement, not an English sentence that happens to use one of its words. */
const SQL_STATEMENT = /\bSELECT\s|\bINSERT\s+INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b|\bFOR\s+UPDATE\b/;

function sqlIn(file: SourceFile): Array<{ line: number; what: string }> {
  const found = new Map<number, string>();
  const note = (node: TS.Node, what: string) => {
    const line = lineOf(file, node);
    if (!found.has(line)) found.set(line, what);
  };
  for (const node of nodesOf(file)) {
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : undefined;
      if (ts.isPropertyAccessExpression(callee) && name !== undefined && /^raw$|Raw$/.test(name))
        note(callee.name, `raw SQL: .${name}(…)`); // the method's own line, not the chain's first
      else if (name !== undefined && QUERY_BUILDERS.has(name) && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
        note(node, `knex table call: ${name}('${node.arguments[0].text}')`);
      }
    } else if (
      (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) &&
      SQL_STATEMENT.test(node.text)
    ) {
      note(node, `SQL in a string: ${JSON.stringify(node.text.trim().split('\n')[0]!.slice(0, 60))}`);
    }
  }
  return [...found].sort(([a], [b]) => a - b).map(([line, what]) => ({ line, what }));
}

/*
 * Which database it is is decided in one place (issue 33): each database's folder exports its
 * kind (sqliteKind, postgresKind: schemes, drivers, SQL pieces, errors) and openStore walks
 * DATABASE_KINDS. Anywhere else, a driver name or a URL scheme tested in code is a decision the
 * next database would silently miss.
 */
describe('architecture: the database is told apart only by its kind', () => {
  /** The database kinds' folders: each under src/store/ holding a kind.ts (sqlite/, postgres/, and a third one's). */
  const kindFolders = files.map((file) => /^(src\/store\/[^/]+\/)kind\.ts$/.exec(file.path)?.[1]).filter((folder) => folder !== undefined);
  /** Where a driver or scheme may be named in a decision: the kinds' own folders, and openStore walking them. */
  const decidesDatabase = (path: string) => kindFolders.some((folder) => path.startsWith(folder)) || path === 'src/store/open-store.ts';
  /** Knex driver names and database kind names, matched whole. */
  const DRIVERS = new Set(['pg', 'postgres', 'postgresql', 'better-sqlite3', 'sqlite', 'sqlite3']);
  /** URL schemes, matched at the start of a string. */
  const SCHEMES = /^(postgres|postgresql|sqlite):/i;
  /** Methods whose argument (or receiver) is tested against: `url.startsWith('sqlite:')`, `['pg'].includes(driver)`. */
  const TESTS = new Set(['startsWith', 'endsWith', 'includes', 'indexOf', 'test', 'match', 'has', 'exec']);
  const COMPARISONS = new Set([
    ts.SyntaxKind.EqualsEqualsEqualsToken,
    ts.SyntaxKind.ExclamationEqualsEqualsToken,
    ts.SyntaxKind.EqualsEqualsToken,
    ts.SyntaxKind.ExclamationEqualsToken,
  ]);

  const namesDatabase = (node: TS.Node) =>
    (ts.isStringLiteralLike(node) || ts.isTemplateHead(node)) && (DRIVERS.has(node.text) || SCHEMES.test(node.text));
  const calledMethod = (node: TS.Node | undefined) =>
    node && ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) ? node.expression.name.text : undefined;

  /** Whether a string naming a database sits where code decides on it. */
  function isDecision(literal: TS.Node): boolean {
    let node = ts.isTemplateHead(literal) ? literal.parent : literal;
    if (ts.isArrayLiteralExpression(node.parent)) node = node.parent; // ['pg', 'postgres'].includes(driver)
    const parent = node.parent;
    if (ts.isBinaryExpression(parent) && COMPARISONS.has(parent.operatorToken.kind)) return true;
    if (ts.isCaseClause(parent) && parent.expression === node) return true;
    if (ts.isPropertyAssignment(parent) && parent.name === node) return true; // a table keyed by driver or scheme
    if (ts.isCallExpression(parent) && TESTS.has(calledMethod(parent) ?? '') && parent.arguments.includes(node as TS.Expression))
      return true;
    if (ts.isPropertyAccessExpression(parent) && parent.expression === node && TESTS.has(parent.name.text)) return true;
    return false;
  }

  /** Each place the file tells a database apart by a driver name, a URL scheme or knex's driver setting. */
  function databaseDecisions(file: SourceFile): Array<{ line: number; what: string }> {
    const found: Array<{ line: number; what: string }> = [];
    for (const node of nodesOf(file)) {
      if (namesDatabase(node) && isDecision(node))
        found.push({ line: lineOf(file, node), what: `tests ${JSON.stringify((node as TS.StringLiteralLike).text)}` });
      else if (ts.isRegularExpressionLiteral(node) && /postgres|sqlite/i.test(node.text))
        found.push({ line: lineOf(file, node), what: `a pattern naming a database: ${node.text}` });
      else if (
        ts.isPropertyAccessExpression(node) &&
        node.name.text === 'client' &&
        ts.isPropertyAccessExpression(node.expression) &&
        node.expression.name.text === 'config'
      ) {
        found.push({ line: lineOf(file, node), what: 'reads the knex driver (client.config.client)' });
      }
    }
    return found;
  }

  test('the check catches a driver or scheme test, and not a message, a URL being built or a comment', () => {
    const made = parseSource(
      'src/feed/made-up.ts',
      [
        "if (knex.client.config.client === 'pg') {}",
        "const isFile = url.startsWith('sqlite:');",
        "if (!/^postgres(ql)?:\\/\\//.test(url)) throw new Error('not a postgres:// URL');",
        "const known = ['better-sqlite3', 'pg'].includes(driver);",
        "switch (kind.name) { case 'postgres': break; }",
        "const openers = { 'sqlite:': open, 'postgres:': open };",
        "const url = `sqlite:${file}`; // a URL built, not tested: sqlite: or 'pg' in a comment",
        'throw new Error(\'DATABASE_URL must start with "sqlite:" or "postgres://"\');',
        "const DEFAULT_DATABASE_URL = 'sqlite:data/event-feed.sqlite';",
        'const step = migration.up.sqlite;',
      ].join('\n'),
    );
    assert.deepEqual(
      [...new Set(databaseDecisions(made).map(({ line }) => line))].sort((a, b) => a - b),
      [1, 2, 3, 4, 5, 6],
    );
  });

  test("no driver name or URL scheme is tested outside the kinds' folders and openStore", () => {
    for (const known of ['src/store/sqlite/', 'src/store/postgres/'])
      assert.ok(kindFolders.includes(known), `${known}kind.ts not found: the kinds' folders are found by it`);
    const violations = files
      .filter((file) => !decidesDatabase(file.path))
      .flatMap((file) => databaseDecisions(file).map(({ line, what }) => `${file.path}:${line} ${what}`));
    assertNone(violations, 'a database told apart outside src/store/<kind>/ and open-store.ts');
  });
});

/**
 * The layers, bottom first (ARCHITECTURE.md's table): a module may import only from its own layer
 * and those below it. Within a layer of several folders, a folder imports no sibling (they are
 * independent pieces at the same height). Each boundary and each sibling pair has a planted
 * violation its self-test sees caught.
 */
export const LAYERS: ReadonlyArray<{ layer: string; holds: readonly string[] }> = [
  { layer: 'base', holds: ['generated/', 'src/base/'] },
  { layer: 'contract', holds: ['src/contract/'] },
  { layer: 'tracing', holds: ['src/tracing/'] },
  { layer: 'net', holds: ['src/net/'] },
  { layer: 'limits', holds: ['src/limits/'] },
  { layer: 'store', holds: ['src/store/'] },
  { layer: 'changes', holds: ['src/changes/'] },
  { layer: 'auth', holds: ['src/auth/'] },
  { layer: 'mechanisms', holds: ['src/feed/', 'src/webhooks/', 'src/erasure/'] },
  { layer: 'operations', holds: ['src/operations/', 'src/metrics/'] },
  { layer: 'front-door', holds: ['src/front-door/'] },
  { layer: 'oauth', holds: ['src/oauth/'] },
  { layer: 'calls', holds: ['src/calls/'] },
  { layer: 'edges', holds: ['src/http/', 'src/mcp/'] },
  { layer: 'library', holds: ['src/library.ts'] },
  { layer: 'demo', holds: ['src/demo/'] },
  { layer: 'app', holds: ['src/app/'] },
  { layer: 'server', holds: ['src/server.ts'] },
  { layer: 'cli', holds: ['src/cli/'] },
];

const layerOf = (path: string) => LAYERS.findIndex(({ holds }) => holds.some((place) => path.startsWith(place)));
const placeOf = (path: string) => LAYERS[layerOf(path)]?.holds.find((place) => path.startsWith(place));

/** An import up a layer, or across to a sibling folder of the same layer (the web view, a browser program apart, is checked on its own). */
function layerViolations(among: ImportEdge[]): string[] {
  return among.flatMap((edge) => {
    const from = layerOf(edge.from);
    const to = layerOf(edge.to);
    if (from < 0 || to < 0) return [];
    if (to > from) return [`${showEdge(edge)}: ${LAYERS[from]!.layer} may not import ${LAYERS[to]!.layer}, a layer above it`];
    if (to === from && placeOf(edge.from) !== placeOf(edge.to))
      return [`${showEdge(edge)}: ${placeOf(edge.from)} and ${placeOf(edge.to)} are siblings in ${LAYERS[from]!.layer}`];
    return [];
  });
}

/** A made-up module of a place, as the self-tests plant them. */
const moduleIn = (place: string) => (place.endsWith('.ts') ? place : `${place}made-up.ts`);
const plantedImport = (from: string, to: string) => ({ from: moduleIn(from), to: moduleIn(to), line: 1, typeOnly: true });

/** Things a module of the edges (http/, mcp/) must not do: the call pays, admits and reserves (Call, answerOperation). */
const ACCOUNTING =
  /\.(?:pay|payWhenAble|reservePage|settle|settleAnswer|refund|admit|admitPage|admitShared|admitSharedMemory|keepShare|takeForAddress|chargeAddress|charge|chargeForBytes|take|letGoOfMemory|resizeMemory|beforeRead|waitBetweenReads)\(/;

function accountingIn(file: SourceFile): string[] {
  return [...nodesOf(file)]
    .filter((node) => ts.isCallExpression(node) && ACCOUNTING.test(`${node.expression.getText(file.tree)}(`))
    .map((node) => `${file.path}:${lineOf(file, node)} ${(node as TS.CallExpression).expression.getText(file.tree)}(…)`);
}

/** Outside src/operations/, an operation is reached through the registry only (runOperation): its modules are registry.ts and context.ts. */
const operationsReachedAround = (among: ImportEdge[]) =>
  among
    .filter(
      (edge) =>
        !edge.from.startsWith('src/operations/') &&
        edge.to.startsWith('src/operations/') &&
        !['src/operations/registry.ts', 'src/operations/context.ts'].includes(edge.to) &&
        !edge.typeOnly,
    )
    .map(showEdge);

describe('architecture: layers that only point down', () => {
  test('every module of src/ sits in a layer', () => {
    assertNone(
      files.filter((file) => layerOf(file.path) < 0).map((file) => `${file.path} is in no layer of LAYERS`),
      'modules outside the layers',
    );
  });

  test('each boundary catches an import planted up across it, and each sibling pair one planted across', () => {
    for (let i = 0; i + 1 < LAYERS.length; i++) {
      for (const below of LAYERS[i]!.holds)
        for (const above of LAYERS[i + 1]!.holds) {
          assert.equal(layerViolations([plantedImport(below, above)]).length, 1, `${below} importing ${above} is not caught`);
          assert.deepEqual(layerViolations([plantedImport(above, below)]), [], `${above} importing ${below} is caught`);
        }
    }
    for (const { holds } of LAYERS)
      for (const a of holds)
        for (const b of holds) if (a !== b) assert.equal(layerViolations([plantedImport(a, b)]).length, 1, `${a} → ${b}`);
    assert.deepEqual(layerViolations([plantedImport('src/limits/', 'src/feed/')]).length, 1, 'limits importing the feed');
  });

  test('no import runs up a layer or across to a sibling (type-only imports count)', () => {
    const view = edges.filter((edge) => !edge.from.startsWith(VIEW));
    assertNone(layerViolations(view), 'imports against the layers');
  });

  test('the edges (http/, mcp/) do no accounting: no rate, token, memory or reservation call', () => {
    const planted = parseSource('src/mcp/made-up.ts', 'call.pay();\nop.reservePage();\n// call.pay() in a comment\nres.settled();\n');
    assert.deepEqual(
      accountingIn(planted).map((v) => v.split(' ')[0]),
      ['src/mcp/made-up.ts:1', 'src/mcp/made-up.ts:2'],
    );
    const edgeFiles = files.filter((file) => /^src\/(?:http|mcp)\//.test(file.path) && !file.path.startsWith(VIEW));
    assertNone(edgeFiles.flatMap(accountingIn), 'accounting in the edges');
  });

  test('outside src/operations/, operations are reached only through the registry (runOperation)', () => {
    assert.equal(operationsReachedAround(importing({ file: 'src/mcp/made-up.ts', imports: '../operations/event-feed.ts' })).length, 1);
    assert.deepEqual(operationsReachedAround(importing({ file: 'src/mcp/made-up.ts', imports: '../operations/registry.ts' })), []);
    assertNone(operationsReachedAround(edges), 'operations reached around the registry');
  });

  test('memory is admitted against the budget from one module (Call)', () => {
    const admitting = files
      .filter((file) => file.path !== 'src/calls/call.ts' && file.path !== 'src/limits/memory-budget.ts')
      .flatMap((file) =>
        [...nodesOf(file)]
          .filter((node) => ts.isCallExpression(node) && /\bmemory\.admit$/.test(node.expression.getText(file.tree)))
          .map((node) => `${file.path}:${lineOf(file, node)}`),
      );
    assertNone(admitting, 'memory admitted outside Call');
  });
});
