import { isWhole, type PageQuery, type StoredPage } from '../port.ts';
import { ReadAhead } from './read-ahead.ts';

/**
 * One page of the feed by keyset: seq > afterSeq, in seq order, at most `limit` events and at most
 * PAGE_MAX_BYTES of them (always at least one). The work is bounded by the page, whatever the
 * workspace holds and whatever the database's statistics say (readSqlitePage, queryPostgresPage). A reader
 * catching up gets the next page read ahead (the read-ahead's notes).
 */
export function pageReader(
  queryPage: (q: PageQuery) => Promise<StoredPage>,
): ((q: PageQuery) => Promise<StoredPage>) & { forget(workspaceId: string): void } {
  const read = (q: PageQuery): Promise<StoredPage> =>
    q.mailboxes !== null && q.mailboxes.length === 0
      ? Promise.resolve({ bytes: Buffer.alloc(0), count: 0, lastSeq: undefined, cutAtByteCap: false })
      : queryPage(q);
  const ahead = new ReadAhead(read);
  const reader = async (q: PageQuery) => {
    const page = (await ahead.take(q)) ?? (await read(q));
    if (isWhole(page, q.limit) && q.limit > 1) ahead.schedule({ ...q, afterSeq: page.lastSeq! });
    return page;
  };
  return Object.assign(reader, { forget: (workspaceId: string) => ahead.forget(workspaceId) });
}
