/**
 * Every relative link of the documentation (README.md, the other READMEs, the pages of docs/)
 * points to a file that exists and, when it names a heading (`page.md#heading`), to a heading of
 * that file, as GitHub anchors it. The map of README.md names a few pages that other work adds;
 * they alone may be missing until it lands.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { anchorsOf, linksOf } from './support/doc-links.ts';
import { documents } from './support/readme-blocks.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Pages README.md's map links to that land with other work (the contract's, MCP's, OAuth's). */
const LANDING_WITH_OTHER_WORK = new Set(['docs/contract-and-clients.md', 'docs/mcp-connecting.md', 'docs/oauth.md']);

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;

describe('the documentation links', () => {
  const files = documents(root);

  it('finds the front page and the pages of docs/', () => {
    assert.ok(files.includes('README.md'));
    assert.ok(files.filter((f) => f.startsWith('docs/')).length >= 15, files.join(', '));
  });

  it('every relative link points to a file, and a heading, that exist', () => {
    const broken: string[] = [];
    const awaited = new Set<string>();
    for (const file of files) {
      for (const { line, target } of linksOf(join(root, file))) {
        if (EXTERNAL.test(target)) continue;
        const [path, anchor] = target.split('#', 2) as [string, string | undefined];
        const resolved = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)));
        const where = `${file}:${line} → ${target}`;
        if (resolved.startsWith('..')) {
          broken.push(`${where}: outside the repository`);
          continue;
        }
        if (!existsSync(join(root, resolved))) {
          if (LANDING_WITH_OTHER_WORK.has(resolved)) awaited.add(resolved);
          else broken.push(`${where}: no such file`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!resolved.endsWith('.md') || statSync(join(root, resolved)).isDirectory()) {
          broken.push(`${where}: an anchor into a file that is not Markdown`);
          continue;
        }
        if (!anchorsOf(join(root, resolved)).has(anchor)) broken.push(`${where}: no heading #${anchor} in ${relative('.', resolved)}`);
      }
    }
    assert.deepEqual(broken, []);
    for (const page of awaited) assert.ok(LANDING_WITH_OTHER_WORK.has(page));
  });

  it('README.md stays a front page: at most 250 lines, with a link to every page of docs/', () => {
    const text = readFileSync(join(root, 'README.md'), 'utf8');
    const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
    assert.ok(lines <= 250, `README.md has ${lines} lines`);
    const linked = new Set(linksOf(join(root, 'README.md')).map((l) => l.target.split('#')[0]));
    for (const page of files.filter((f) => f.startsWith('docs/'))) assert.ok(linked.has(page), `README.md's map does not link ${page}`);
  });
});
