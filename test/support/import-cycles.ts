import type { ImportEdge } from './source-files.ts';

/**
 * The import circles of a graph, one per strongly connected component (a set of files each of
 * which reaches every other through imports): its files, one shortest circle through them to
 * show the knot, and every import inside it, since breaking the knot means removing some of those.
 */
export interface ImportCycle {
  files: string[];
  example: string[];
  edges: ImportEdge[];
}

export function importCycles(edges: ImportEdge[]): ImportCycle[] {
  const next = new Map<string, string[]>();
  for (const edge of edges) {
    if (!next.has(edge.from)) next.set(edge.from, []);
    next.get(edge.from)!.push(edge.to);
  }
  return stronglyConnected(next)
    .filter((files) => files.length > 1 || (next.get(files[0]!) ?? []).includes(files[0]!))
    .map((files) => {
      const members = new Set(files);
      return {
        files: [...files].sort(),
        example: shortestCircle([...files].sort()[0]!, next, members),
        edges: edges.filter((edge) => members.has(edge.from) && members.has(edge.to)),
      };
    })
    .sort((a, b) => a.files[0]!.localeCompare(b.files[0]!));
}

/** Tarjan's algorithm, iterative so a long chain of imports cannot overflow the stack. */
function stronglyConnected(next: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  for (const root of next.keys()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; child: number }> = [{ node: root, child: 0 }];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = next.get(frame.node) ?? [];
      if (frame.child < targets.length) {
        const target = targets[frame.child++]!;
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, child: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        components.push(component);
      }
    }
  }
  return components;
}

/** Breadth first from `start` back to itself, staying inside the component. */
function shortestCircle(start: string, next: Map<string, string[]>, members: Set<string>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const target of next.get(node) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [start];
        for (let at = node; at !== start; at = cameFrom.get(at)!) path.unshift(at);
        path.unshift(start);
        return path;
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, node);
        queue.push(target);
      }
    }
  }
  return [start];
}
