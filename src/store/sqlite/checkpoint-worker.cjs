// SQLite WAL checkpoints, on a thread of their own (see WalCheckpointer):
// copying the WAL into the database file and syncing it takes milliseconds, tens under load, that
// the event loop would otherwise spend blocked. Plain CommonJS: a worker starts without a loader.
const { parentPort, workerData } = require('node:worker_threads');
const Database = require('better-sqlite3');

const db = new Database(workerData.filename);
db.pragma('busy_timeout = 5000');
parentPort.on('message', () => {
  try {
    // PASSIVE: copies what no reader still needs, never waits for (nor blocks) readers and writers.
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, log: result.log });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String(err && err.message) });
  }
});
