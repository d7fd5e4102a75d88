/**
 * A strict parser of Prometheus's text exposition format (0.0.4), for tests. Strict on purpose:
 * it throws on any line that is not a comment, a TYPE/HELP line or a well-formed sample, on a
 * sample whose family has no TYPE, on a TYPE given twice, and on a family's samples split apart
 * (what Prometheus's own parser refuses). The parsers on npm are lenient, untyped and
 * single-author, and the format is small: a lenient parser would let malformed output pass.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** Each family's TYPE (counter, gauge, histogram, summary, untyped). */
  types: Map<string, string>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"\s*(?:,|$)/y;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export function parsePrometheusText(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const done = new Set<string>();
  let current: string | undefined;
  text.split('\n').forEach((line, i) => {
    const where = `line ${i + 1}: ${JSON.stringify(line.slice(0, 120))}`;
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const [, keyword, name, rest] = /^#\s+(\S+)\s+(\S+)\s*(.*)$/.exec(line) ?? [];
      if (keyword === 'TYPE') {
        if (!NAME.test(name!) || !TYPES.has(rest!)) throw new Error(`bad TYPE, ${where}`);
        if (types.has(name!)) throw new Error(`TYPE given twice, ${where}`);
        types.set(name!, rest!);
      } else if (keyword === 'HELP' && !NAME.test(name!)) throw new Error(`bad HELP, ${where}`);
      return;
    }
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a sample, ${where}`);
    const [, name, labelText, valueText] = match;
    const family = familyOf(name!, types);
    if (!family) throw new Error(`sample without a TYPE, ${where}`);
    if (family !== current) {
      if (done.has(family)) throw new Error(`family ${family} split apart, ${where}`);
      if (current) done.add(current);
      current = family;
    }
    samples.push({ name: name!, labels: parseLabels(labelText ?? '', where), value: parseValue(valueText!, where) });
  });
  return { samples, types };
}

function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count|created)$/, '');
  const type = types.get(base);
  return type === 'histogram' || type === 'summary' ? base : undefined;
}

function parseLabels(text: string, where: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const start = LABEL.lastIndex;
    const match = LABEL.exec(text);
    if (!match || match.index !== start) throw new Error(`bad labels, ${where}`);
    if (Object.hasOwn(labels, match[1]!)) throw new Error(`label ${match[1]} twice, ${where}`);
    labels[match[1]!] = match[2]!.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

/** As Prometheus reads a value (Go's strconv.ParseFloat): NaN and Inf in any case (prom-client writes `Nan`). */
function parseValue(text: string, where: string): number {
  if (/^[+-]?(inf|infinity)$/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  if (/^nan$/i.test(text)) return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad value, ${where}`);
  return Number(text);
}

/** The value of the one sample with this name whose labels include `labels` (0 when there is none). */
export function valueOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  const found = exposition.samples.filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}

/** The sum of every sample with this name whose labels include `labels`. */
export function sumOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  return exposition.samples
    .filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
    .reduce((sum, sample) => sum + sample.value, 0);
}
