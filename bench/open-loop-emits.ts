import { Pool } from 'undici';
import { benchTraffic } from './seed.ts';
import { sleep } from './stats.ts';

/** The headers of a keyed JSON request. */
export const jsonHeaders = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

/** What the writer saw of one emit: which key sent it, its answer, and when it was sent and answered (performance.now()). */
export interface EmitAnswer {
  keyIndex: number;
  statusCode: number;
  text: string;
  sentAt: number;
  answeredAt: number;
}

/**
 * emit_event at `rate` per second in all, round-robin over `keys`, for `seconds`: an open loop,
 * so a server that falls behind is measured, not waited for (past 64 in flight an emit is skipped and
 * counted, never queued). Each answer, or failure (`statusCode` 0, `text` its message), goes to
 * `onAnswer`; the phases keep what they need of it (tailing: counts per key; long-poll: each event's
 * id and answer time).
 */
export async function openLoopEmits(
  c: { url: string; keys: string[]; rate: number; seconds: number; seedChunk: number },
  onAnswer: (answer: EmitAnswer) => void,
) {
  const pool = new Pool(c.url, { connections: 16, pipelining: 1, keepAliveTimeout: 60_000 });
  const bodies = benchTraffic(2000, c.seedChunk, Date.now() - 3_600_000).map((e) => JSON.stringify({ ...e, occurred_at: undefined }));
  let sent = 0;
  let inFlight = 0;
  let skipped = 0;
  const total = Math.round(c.rate * c.seconds);
  const started = performance.now();
  const pending = new Set<Promise<void>>();
  while (sent + skipped < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * c.rate));
    while (sent + skipped < due) {
      if (inFlight >= 64) {
        skipped++; // the server is not keeping up: counted, not queued
        continue;
      }
      const keyIndex = (sent + skipped) % c.keys.length;
      const body = bodies[sent % bodies.length]!;
      sent++;
      inFlight++;
      const sentAt = performance.now();
      const p: Promise<void> = pool
        .request({
          method: 'POST',
          path: '/v1/emit_event',
          headers: jsonHeaders(c.keys[keyIndex]!),
          body,
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        })
        .then(async ({ statusCode, body: answer }) => {
          const text = await answer.text();
          onAnswer({ keyIndex, statusCode, text, sentAt, answeredAt: performance.now() });
        })
        .catch((err) => onAnswer({ keyIndex, statusCode: 0, text: String((err as Error).message), sentAt, answeredAt: performance.now() }))
        .finally(() => {
          inFlight--;
          pending.delete(p);
        });
      pending.add(p);
    }
    await sleep(2);
  }
  await Promise.all(pending);
  const seconds = (performance.now() - started) / 1000;
  await pool.destroy();
  return { sent, skipped, seconds };
}
