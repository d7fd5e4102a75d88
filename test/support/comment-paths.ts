/**
 * The file names a comment mentions (`feed/page.ts`, `call.ts`), for the architecture test's checks
 * that a comment in src/ or client/src/ names no source file, and that one elsewhere names a file
 * that exists. Comments should name symbols (a function, a class, a const), which survive a move;
 * a file name left behind by one misleads whoever follows it.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type TS from 'typescript';
import { repoRoot, ts, type SourceFile } from './source-files.ts';

export interface CommentPath {
  /** As written in the comment: `edge/call.ts`. */
  name: string;
  line: number;
}

/** A path-like word ending in a source file's extension: `store/common/feed-page.ts`, `listen.ts`, `build.mjs`. */
const FILE_NAME = /[\w@./-]*[\w-]\.(?:ts|mts|cts|mjs|cjs)\b/g;

/** Every file name written in the file's comments (never in its code or strings), with its line. */
export function commentPathsOf(file: SourceFile): CommentPath[] {
  const text = file.tree.text;
  // Every comment is trivia around some token: leading (on lines of its own before it) or trailing
  // (after it on its line). The tokens' bounds find them all, once each.
  const comments = new Map<number, TS.CommentRange>();
  const visit = (node: TS.Node) => {
    for (const range of [...(ts.getLeadingCommentRanges(text, node.pos) ?? []), ...(ts.getTrailingCommentRanges(text, node.end) ?? [])])
      comments.set(range.pos, range);
    for (const child of node.getChildren(file.tree)) visit(child);
  };
  visit(file.tree);
  const found: CommentPath[] = [];
  for (const range of [...comments.values()].sort((a, b) => a.pos - b.pos)) {
    for (const match of text.slice(range.pos, range.end).matchAll(FILE_NAME)) {
      found.push({ name: match[0], line: file.tree.getLineAndCharacterOfPosition(range.pos + match.index).line + 1 });
    }
  }
  return found;
}

/** Whether a name from a comment is a TypeScript source file's (`feed/heads.ts`): src/ and client/src/ name the symbol instead. */
export const namesASourceFile = (name: string) => /\.[mc]?ts$/.test(name);

/**
 * Whether a name from a comment of the file at `path` names an existing file: taken from the
 * comment's own folder or any folder above it (`edge/call.ts` from src/http/, `support/seed.ts`
 * from conformance/api/), or from src/ (`operations/registry.ts` said anywhere).
 */
export function namesAFile(
  path: string,
  name: string,
  exists: (repoPath: string) => boolean = (repoPath) => existsSync(join(repoRoot, repoPath)),
): boolean {
  const bases: string[] = ['src'];
  for (let folder = dirname(path); ; folder = dirname(folder)) {
    bases.push(folder === '.' ? '' : folder);
    if (folder === '.' || folder === '/') break;
  }
  const clean = name.replace(/^\.\//, '');
  return bases.some((base) => exists(base === '' ? clean : `${base}/${clean}`));
}
