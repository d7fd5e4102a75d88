import { readFileSync } from 'node:fs';
import GithubSlugger from 'github-slugger';

/** A link of a Markdown document: where it is and what it points to. */
export interface DocLink {
  line: number;
  target: string;
}

const FENCE = /^\s*(`{3,}|~{3,})/;

/** Markdown lines outside fenced blocks (links in code are not links). */
function proseLines(text: string): Array<{ line: number; text: string }> {
  const lines = text.split('\n');
  const prose = [];
  let fence: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (fence) {
      if (open && lines[i]!.trim().startsWith(fence)) fence = undefined;
      continue;
    }
    if (open) {
      fence = open[1]!;
      continue;
    }
    prose.push({ line: i + 1, text: lines[i]! });
  }
  return prose;
}

/** Every inline link `[text](target)` and image of a Markdown file, in prose. */
export function linksOf(file: string): DocLink[] {
  const links: DocLink[] = [];
  for (const { line, text } of proseLines(readFileSync(file, 'utf8'))) {
    // Nor in inline code.
    for (const match of text.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) links.push({ line, target: match[1]! });
  }
  return links;
}

/**
 * The anchors of a Markdown file's headings, as GitHub makes them (github-slugger: lower case,
 * punctuation dropped, spaces to hyphens, `-1`, `-2`… for repeated headings).
 */
export function anchorsOf(file: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  for (const { text } of proseLines(readFileSync(file, 'utf8'))) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    // A heading's inline code counts by its text (« A lean `/v1` edge »: a-lean-v1-edge).
    if (heading) anchors.add(slugger.slug(heading[1]!.replaceAll('`', '')));
  }
  return anchors;
}
