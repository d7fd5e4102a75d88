/** How long a Postgres query may go unanswered before the connection is given up (a partition, not a slow query). */
export const QUERY_TIMEOUT_MS = 5000;
/**
 * The database cancels a statement itself after this long (Postgres's statement_timeout), a
 * second before the client would give up on it: the error is then the database's own and the
 * statement rolled back, so "not stored" is a true answer. Were it longer, the client would drop
 * the connection while Postgres went on, and might commit (provesRollback). A commit is
 * not a statement: a commit that outlasts the query timeout is the one case left whose outcome is
 * unknown.
 */
export const STATEMENT_TIMEOUT_MS = 4000;
/**
 * How long a statement waits for a row lock (lock_timeout), below STATEMENT_TIMEOUT_MS so a wait
 * for a workspace's counter row held by another transaction (an application's transaction that
 * published and has not committed yet) is reported as such.
 */
export const LOCK_TIMEOUT_MS = 3000;
