/**
 * A writer: transactions of 1–10 events on a random workspace through the store's append path,
 * with a pause before and after the append (0–20 ms, the second one holding whatever the append
 * locked), ~5% deliberate rollbacks (throw after appending), and one outcome recorded per
 * transaction. The outcome follows what the client can know: COMMIT returned → committed; error
 * before COMMIT was sent → failed; error once COMMIT was sent → unknown (resolved afterwards).
 */
import type { Knex } from 'knex';
import { between, newEvent, pick, sleep, type FeedStore, type TxRecord } from './model.ts';

class DeliberateRollback extends Error {}

export interface WriterConfig {
  name: string;
  db: Knex;
  store: FeedStore;
  workspaces: string[];
  /** Stops starting transactions at this time (ms since epoch). */
  deadline: number;
  /** Also stops when this turns true. */
  stopped?: () => boolean;
  rollbackProbability?: number;
  maxPauseMs?: number;
  maxEvents?: number;
  /** How a transaction runs (default db.transaction(work); SQLite writers use writeTransaction, which retries busy errors). */
  transaction?: (db: Knex, work: (trx: Knex.Transaction) => Promise<void>) => Promise<void>;
  /** Postgres: an error after COMMIT was sent leaves the outcome unknown. SQLite (in-process library): it is a plain failure. */
  commitErrorIsUnknown: boolean;
  /** First statement inside each transaction attempt (e.g. register the backend pid). */
  onBegin?: (trx: Knex.Transaction) => Promise<void>;
  /** Right before the transaction body returns, i.e. as COMMIT is about to be sent. */
  beforeCommit?: () => void;
  /** After each transaction, whatever its outcome. */
  onEnd?: () => void;
  /** Before a transaction starts (its ids are final) and once its outcome is known. */
  onStart?: (tx: TxRecord) => void;
  onRecord?: (tx: TxRecord) => void;
  /** After COMMIT returned, before the outcome is recorded (the application's own post-commit work). */
  afterCommit?: () => Promise<void>;
}

export interface WriterStats {
  records: TxRecord[];
  /** Transaction attempts beyond the first (retries of busy errors, SQLite). */
  retries: number;
  /** Why transactions failed: error code or message → count. */
  failures: Record<string, number>;
}

export async function runWriter(cfg: WriterConfig): Promise<WriterStats> {
  const stats: WriterStats = { records: [], retries: 0, failures: {} };
  const maxPause = cfg.maxPauseMs ?? 20;
  const transaction = cfg.transaction ?? ((db, work) => db.transaction(work));
  while (Date.now() < cfg.deadline && !cfg.stopped?.()) {
    const events = Array.from({ length: between(1, cfg.maxEvents ?? 10) }, newEvent);
    const tx: TxRecord = { writer: cfg.name, ws: pick(cfg.workspaces), ids: events.map((e) => e.id!), outcome: 'failed' };
    const rollback = Math.random() < (cfg.rollbackProbability ?? 0.05);
    let commitSent = false;
    let deliberate = false;
    let attempts = 0;
    let cause: unknown;
    cfg.onStart?.(tx);
    try {
      await transaction(cfg.db, async (trx) => {
        attempts++;
        commitSent = false;
        try {
          await cfg.onBegin?.(trx);
          await sleep(between(0, maxPause));
          await cfg.store.append(trx, tx.ws, events);
          await sleep(between(0, maxPause));
        } catch (err) {
          cause = err; // knex reports the failed ROLLBACK that follows; keep what went wrong first
          throw err;
        }
        if (rollback) {
          deliberate = true;
          throw new DeliberateRollback();
        }
        commitSent = true;
        cfg.beforeCommit?.();
      });
      tx.outcome = 'committed';
      await cfg.afterCommit?.();
    } catch (err) {
      // A deliberate rollback whose ROLLBACK itself met a killed connection is still a rollback: COMMIT was never sent.
      if (deliberate) {
        tx.outcome = 'rolledBack';
      } else if (commitSent && cfg.commitErrorIsUnknown) {
        tx.outcome = 'unknown';
      } else {
        tx.outcome = 'failed';
        const e = (cause ?? err) as { code?: string; message?: string };
        // knex prefixes the failing SQL: keep the driver's words
        const reason = e.code ?? String(e.message).split(' - ').at(-1)!.slice(0, 50);
        tx.reason = reason;
        stats.failures[reason] = (stats.failures[reason] ?? 0) + 1;
      }
    } finally {
      cfg.onEnd?.();
    }
    stats.retries += Math.max(0, attempts - 1);
    stats.records.push(tx);
    cfg.onRecord?.(tx);
  }
  return stats;
}
