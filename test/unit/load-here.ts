/**
 * `npm run test:unit`: the fast loop, an answer in seconds with no database server. `npm test`
 * (CI's and the README's command) still runs every file, each in its own process, on SQLite and
 * Postgres; CI runs this loop first, so that a plain mistake fails in seconds.
 *
 * A test file belongs in the loop when it runs on SQLite inside the test process: no database
 * server (its Postgres suites are left out by TEST_POSTGRES=off, see test/support/databases.ts),
 * no child process, no browser, no npm pack, no build, and no test that waits on purpose for a
 * timeout, a budget refill or a background worker. Between them the files of the two groups
 * (in-process.ts, over-http.ts) reach every layer: the architecture's rules, the contract, the
 * feed, keys, the operations over HTTP and MCP, webhooks and limits.
 *
 * Each group's files run together in one process: alone, each would pay again for loading the
 * service's modules, which costs more than most of their tests. The two groups are two processes,
 * one per core.
 */
export async function loadHere(files: string[]): Promise<void> {
  process.env.TEST_POSTGRES = 'off';
  // One after the other: a file's top-level await (which databases to run on) is done before the
  // next file registers its tests.
  for (const name of files) await import(`../${name}.test.ts`);
}
