/**
 * Colour for a person at a terminal, never in a pipe or a file: on when the stream is a TTY and
 * NO_COLOR (https://no-color.org) is unset or empty; FORCE_COLOR (not 0) turns it on anyway.
 */
export function colourOn(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true;
}

const CODES = { red: 31, green: 32, yellow: 33, dim: 2, bold: 1 } as const;
export type Colour = keyof typeof CODES;

export type Paint = (colour: Colour, text: string) => string;

export const painter = (on: boolean): Paint =>
  on ? (colour, text) => `\u001b[${CODES[colour]}m${text}\u001b[0m` : (_colour, text) => text;

/** A duration for a person: `850 ms`, `2.5 s`. */
export const duration = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`);
