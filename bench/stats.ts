/** Latency summaries, in milliseconds. */
export interface Latency {
  n: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

export function latency(samples: number[]): Latency {
  if (samples.length === 0) return { n: 0, p50: NaN, p99: NaN, mean: NaN, max: NaN };
  const sorted = Float64Array.from(samples).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  const sum = sorted.reduce((a, b) => a + b, 0);
  return { n: sorted.length, p50: round(at(0.5)), p99: round(at(0.99)), mean: round(sum / sorted.length), max: round(sorted.at(-1)!) };
}

export const round = (x: number, digits = 3) => {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A client process's entry: its config is argv[2] (JSON); it prints its result as one JSON line. */
export async function clientMain(modes: Record<string, (config: any) => Promise<unknown>>): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}');
  const run = modes[config.mode];
  if (!run) throw new Error(`unknown mode ${config.mode}`);
  const result = await run(config);
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
}

/** Resolves when a line `drain` arrives on stdin: the orchestrator's word to a load process that the writer has stopped. */
export const drainSaid = () =>
  new Promise<void>((resolve) => {
    let text = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk: string) => {
      text += chunk;
      if (text.split('\n').includes('drain')) resolve();
    });
  });
