/**
 * node --import tsx bench/cpuprofile-summary.ts FILE.cpuprofile [top]
 *
 * Where the time of a `node --cpu-prof` profile goes: self time by function and by package, and
 * total (inclusive) time of the functions on the hot path. (`npm run bench -- --profile DIR` writes
 * one for the server of each database.)
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const file = process.argv[2];
if (!file) throw new Error('usage: cpuprofile-summary.ts FILE.cpuprofile [top]');
const top = Number(process.argv[3] ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
const idle = new Set(['(idle)', '(program)', '(garbage collector)']);

const where = (n: Node) => {
  const url = n.callFrame.url.replace(/^file:\/\//, '');
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.startsWith('node:')) return 'node-core';
  if (url === '') return n.callFrame.functionName.startsWith('(') ? n.callFrame.functionName : 'native';
  return url.replace(/.*\/(src|bench|bin)\//, '$1/');
};
const label = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${where(n)}:${n.callFrame.lineNumber + 1}`;
const pct = (us: number) => `${((us / totalUs) * 100).toFixed(1).padStart(5)}%`;

const selfByFn = new Map<string, number>();
const selfByPkg = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  selfByFn.set(label(n), (selfByFn.get(label(n)) ?? 0) + us);
  selfByPkg.set(where(n), (selfByPkg.get(where(n)) ?? 0) + us);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (!seen.has(l)) (inclusive.set(l, (inclusive.get(l) ?? 0) + us), seen.add(l));
  }
}
const busy = totalUs - [...idle].reduce((a, k) => a + (selfByPkg.get(k) ?? 0), 0);
const show = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
};
console.log(`${file}: ${(totalUs / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (not idle/program/GC: ${pct(busy)})`);
show('self time by package', selfByPkg);
show('self time by function', selfByFn);
show('inclusive time by function', new Map([...inclusive].filter(([k]) => !k.startsWith('(root)'))));
