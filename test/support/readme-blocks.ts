import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface ShellBlock {
  /** The document's path from the repository's root (a README, or a page of docs/). */
  readme: string;
  /** The line of the block's opening fence (1-based). */
  line: number;
  text: string;
}

const SHELL = new Set(['sh', 'bash', 'shell', 'zsh']);
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', '.git', 'playwright-report', 'test-results']);

/**
 * The repository's documentation: every README*.md (not in node_modules, builds or reports) and
 * every page of docs/ (README.md's map points there, one page per topic).
 */
export function documents(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && !SKIPPED_FOLDERS.has(entry.name) && !entry.isSymbolicLink()) walk(join(dir, entry.name));
      else if (entry.isFile() && /^readme.*\.md$/i.test(entry.name)) found.push(relative(root, join(dir, entry.name)));
    }
  };
  walk(root);
  const docs = join(root, 'docs');
  if (existsSync(docs)) {
    for (const entry of readdirSync(docs, { withFileTypes: true }))
      if (entry.isFile() && entry.name.endsWith('.md')) found.push(join('docs', entry.name));
  }
  return [...new Set(found)].sort();
}

/** The fenced ```sh / ```bash blocks of a Markdown file, as a reader would paste them. */
export function shellBlocks(root: string, readme: string): ShellBlock[] {
  const lines = readFileSync(join(root, readme), 'utf8').split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, info] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !lines[j]!.trim().startsWith(fence!); j++) body.push(lines[j]!.slice(indent!.length));
    if (SHELL.has(info!.toLowerCase())) blocks.push({ readme, line: i + 1, text: body.join('\n') + '\n' });
    i = j;
  }
  return blocks;
}
