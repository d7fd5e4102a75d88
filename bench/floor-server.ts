/**
 * The floor of the replay on this machine: a bare node:http server that answers POST /v1/event_feed
 * with one real page of 500 envelopes held in memory (already encoded), `pages` times, then an empty
 * page. The replay client reads it with its usual loop: what it reaches is the most any server could
 * give that client here, with no database, no framework and nothing to splice.
 * argv[2]: JSON { pageFile, pages }; prints the port on stdout once listening.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const { pageFile, pages } = JSON.parse(process.argv[2]!) as { pageFile: string; pages: number };
const page = Buffer.from(readFileSync(pageFile, 'utf8'));
const empty = Buffer.from('{"events":[],"next_cursor":"x"}');
let served = 0;
const server = createServer((req, res) => {
  let text = '';
  req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  req.on('end', () => {
    // A request without "after" starts a replay (the client's warm-up, then its measured run).
    if (!text.includes('"after"')) served = 0;
    const body = served++ < pages ? page : empty;
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
