/**
 * The floor of tailing on Postgres: a bare node:http server that answers every POST /v1/event_feed
 * "nothing new" (its own cursor back) and nothing else: no key, no cursor signature, no page. With
 * `roundTrip`, each answer first waits, as the service's does, for a round trip on a listening
 * connection sent after the request arrived, through the service's own code (ChangeWatch,
 * listenForChanges): what the cheapest correct "nothing new" costs on this machine under the
 * same clients and the same writer. Without it: what answering at all costs.
 * argv[2]: JSON { databaseUrl, roundTrip }; prints the port on stdout once listening (and, with
 * `roundTrip`, once the channel is live).
 */
import { createServer } from 'node:http';
import { ChangeWatch } from '../src/feed/change-watch.ts';
import { createLogger } from '../src/base/log.ts';
import { listenForChanges } from '../src/store/postgres/changes.ts';

const { databaseUrl, roundTrip } = JSON.parse(process.argv[2]!) as { databaseUrl: string; roundTrip: boolean };
const changes = new ChangeWatch();
const heads = changes.heads;
const listener = roundTrip ? listenForChanges(databaseUrl, changes, createLogger('warn')) : undefined;
// A head of its own that nothing moves: only the round trip decides when the answer goes.
const FLOOR = 'floor';

const answer = (res: import('node:http').ServerResponse, after: unknown) => {
  const body = Buffer.from(JSON.stringify({ events: [], next_cursor: after }));
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
};

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const { after } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { after?: string };
    const ticket = heads.ticket(); // where the service's operation takes it: once the body is read
    if (!listener) return answer(res, after);
    heads.heard(FLOOR, 0);
    void heads.nothingAfterNow(FLOOR, 0, ticket).then((known) => {
      if (known) return answer(res, after);
      res.writeHead(503).end(); // the channel is down: the client counts it as an error
    });
  });
});
server.keepAliveTimeout = 60_000;

const deadline = Date.now() + 10_000;
while (listener && !changes.live) {
  if (Date.now() > deadline) throw new Error('tail floor: the listening connection did not come up in 10 s');
  await new Promise((resolve) => setTimeout(resolve, 20));
}
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
process.on('SIGTERM', () => server.close(() => void (listener?.stop() ?? Promise.resolve()).then(() => process.exit(0))));
