import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The ledger of the keys the kit made with EVENT_FEED_ADMIN_KEY (provisionKeys): their ids and
 * labels (never the keys), whether each was revoked, and what the kit could not make. A file in the
 * run's output folder (EVENT_FEED_KEY_LEDGER, set by the config), like the rate-limit waits: the
 * global setup writes it as it makes each key, the global teardown reads it to revoke them all, and
 * the reporter, which may be loaded apart from both, says what happened.
 */
export interface MadeKey {
  id: string;
  /** What the kit made it for: `read`, `restricted`, `without read`, `revoked`, `write`. */
  role: string;
  label: string;
  revoked: boolean;
  /** Why revoking it failed, when it did. */
  error?: string;
}

export interface KeyLedger {
  made: MadeKey[];
  /** Set by the teardown: a key the setup makes from now on is revoked at once. */
  closing: boolean;
  /** What the admin key could not provide, and why (for the report). */
  notMade: string[];
  /** The mailboxes the kit's restricted key was restricted to. */
  restrictedMailboxes?: string[];
}

const EMPTY: KeyLedger = { made: [], closing: false, notMade: [] };
/** Without a ledger file (a config that sets none), the runner's own memory. */
let inMemory: KeyLedger = structuredClone(EMPTY);

export function readLedger(): KeyLedger {
  const path = process.env.EVENT_FEED_KEY_LEDGER;
  if (!path) return structuredClone(inMemory);
  try {
    return { ...structuredClone(EMPTY), ...(JSON.parse(readFileSync(path, 'utf8')) as Partial<KeyLedger>) };
  } catch {
    return structuredClone(EMPTY);
  }
}

/** Reads, changes and writes the ledger (one process writes it: the runner's setup and teardown). */
export function updateLedger(change: (ledger: KeyLedger) => void): KeyLedger {
  const ledger = readLedger();
  change(ledger);
  const path = process.env.EVENT_FEED_KEY_LEDGER;
  if (path) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${JSON.stringify(ledger, null, 2)}\n`);
  } else inMemory = structuredClone(ledger);
  return ledger;
}
