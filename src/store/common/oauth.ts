import type { Knex } from 'knex';
import type { CappedInsert, OAuthClientRow, OAuthGrantRow, OAuthRequestRow, OAuthTokenHashes, Store } from '../port.ts';

type Db = Knex | Knex.Transaction;
type ReadRows = <T>(sql: string, bindings: readonly Knex.Value[]) => Promise<T[]>;

/** How many stale rows one write clears on its way (expired requests, unused clients): each write's work stays small. */
const SWEEP_BATCH = 100;

/** The statement every MCP request with an OAuth access token runs, as fixed text (RawRows). */
const SELECT_GRANT_BY_ACCESS = 'SELECT * FROM oauth_grants WHERE access_sha256 = ?';

// Postgres gives bigint columns as strings: every time column is read back as a number.
const nullableNumber = (value: unknown) => (value === null || value === undefined ? null : Number(value));

function clientRow(raw: Record<string, unknown>): OAuthClientRow {
  return {
    client_id: String(raw.client_id),
    metadata: String(raw.metadata),
    created_at: Number(raw.created_at),
    used_at: nullableNumber(raw.used_at),
    address: raw.address === null || raw.address === undefined ? null : String(raw.address),
  };
}

function requestRow(raw: Record<string, unknown>): OAuthRequestRow {
  return {
    ...(raw as unknown as OAuthRequestRow),
    redirect_uri_given: Number(raw.redirect_uri_given),
    key_attempts: Number(raw.key_attempts),
    created_at: Number(raw.created_at),
    expires_at: Number(raw.expires_at),
  };
}

function grantRow(raw: Record<string, unknown>): OAuthGrantRow {
  return {
    ...(raw as unknown as OAuthGrantRow),
    redirect_uri_given: Number(raw.redirect_uri_given),
    created_at: Number(raw.created_at),
    expires_at: Number(raw.expires_at),
    code_expires_at: Number(raw.code_expires_at),
    code_used_at: nullableNumber(raw.code_used_at),
    access_expires_at: nullableNumber(raw.access_expires_at),
    refresh_expires_at: nullableNumber(raw.refresh_expires_at),
    revoked_at: nullableNumber(raw.revoked_at),
  };
}

/** Clients that count: used once, or registered since `unusedBefore` (the others have expired). */
const liveClients = (query: Knex.QueryBuilder, unusedBefore: number) =>
  query.where((live) => live.whereNotNull('used_at').orWhere('created_at', '>=', unusedBefore));

async function registerClient(
  db: Db,
  row: OAuthClientRow,
  limits: { cap: number; perAddress: number; unusedBefore: number },
): Promise<CappedInsert> {
  const stale = db('oauth_clients')
    .select('client_id')
    .whereNull('used_at')
    .where('created_at', '<', limits.unusedBefore)
    .orderBy('created_at')
    .limit(SWEEP_BATCH);
  await db('oauth_clients').whereIn('client_id', stale).del();
  if (row.address !== null) {
    const fromAddress = await db('oauth_clients')
      .where({ address: row.address })
      .whereNull('used_at')
      .where('created_at', '>=', limits.unusedBefore)
      .count({ n: '*' })
      .first();
    if (Number(fromAddress?.n ?? 0) >= limits.perAddress) return 'address_full';
  }
  const counted = await liveClients(db('oauth_clients'), limits.unusedBefore).count({ n: '*' }).first();
  if (Number(counted?.n ?? 0) >= limits.cap) return 'full';
  await db('oauth_clients').insert(row);
  return 'stored';
}

async function addRequest(db: Db, row: OAuthRequestRow, limits: { cap: number; perAddress: number; now: number }): Promise<CappedInsert> {
  const expired = db('oauth_requests')
    .select('handle_sha256')
    .where('expires_at', '<=', limits.now)
    .orderBy('expires_at')
    .limit(SWEEP_BATCH);
  await db('oauth_requests').whereIn('handle_sha256', expired).del();
  if (row.address !== null) {
    const fromAddress = await db('oauth_requests')
      .where({ address: row.address })
      .where('expires_at', '>', limits.now)
      .count({ n: '*' })
      .first();
    if (Number(fromAddress?.n ?? 0) >= limits.perAddress) return 'address_full';
  }
  const counted = await db('oauth_requests').where('expires_at', '>', limits.now).count({ n: '*' }).first();
  if (Number(counted?.n ?? 0) >= limits.cap) return 'full';
  await db('oauth_requests').insert(row);
  return 'stored';
}

async function addGrant(db: Knex, row: OAuthGrantRow, limits: { maxPerKey: number; now: number }): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('oauth_grants')
      .where({ key_id: row.key_id })
      .where((dead) => dead.where('expires_at', '<=', limits.now).orWhereNotNull('revoked_at'))
      .del();
    const live = await trx('oauth_grants')
      .select('id')
      .where({ key_id: row.key_id })
      .whereNull('revoked_at')
      .where('expires_at', '>', limits.now)
      .orderBy('created_at', 'desc');
    const beyond = live.slice(Math.max(0, limits.maxPerKey - 1)).map((grant: { id: string }) => grant.id);
    if (beyond.length > 0) await trx('oauth_grants').whereIn('id', beyond).update({ revoked_at: limits.now });
    await trx('oauth_grants').insert(row);
  });
}

async function redeemCode(db: Db, codeSha256: string, now: number, tokens: OAuthTokenHashes): Promise<boolean> {
  const updated = await db('oauth_grants')
    .where({ code_sha256: codeSha256 })
    .whereNull('code_used_at')
    .whereNull('revoked_at')
    .where('code_expires_at', '>', now)
    .update({ ...tokens, code_used_at: now, expires_at: tokens.refresh_expires_at });
  return updated === 1;
}

async function rotateTokens(db: Db, grantId: string, refreshSha256: string, now: number, tokens: OAuthTokenHashes): Promise<boolean> {
  const updated = await db('oauth_grants')
    .where({ id: grantId, refresh_sha256: refreshSha256 })
    .whereNull('revoked_at')
    .where('refresh_expires_at', '>', now)
    .update({ ...tokens, expires_at: tokens.refresh_expires_at });
  return updated === 1;
}

/** Store.oauth over one database: `readRows` for the hot lookup, knex for the rest. */
export function oauthTables(db: Knex, readRows: ReadRows): Store['oauth'] {
  const first = async <T>(rows: Promise<T[]>) => (await rows)[0];
  return {
    registerClient: (row, limits) => registerClient(db, row, limits),
    client: async (clientId, unusedBefore) => {
      const raw = await liveClients(db('oauth_clients').where({ client_id: clientId }), unusedBefore).first();
      return raw ? clientRow(raw) : undefined;
    },
    markClientUsed: async (clientId, now) =>
      void (await db('oauth_clients').where({ client_id: clientId }).whereNull('used_at').update({ used_at: now })),
    addRequest: (row, limits) => addRequest(db, row, limits),
    request: async (handleSha256) => {
      const raw = await db('oauth_requests').where({ handle_sha256: handleSha256 }).first();
      return raw ? requestRow(raw) : undefined;
    },
    updateRequest: async (handleSha256, changes) =>
      void (await db('oauth_requests').where({ handle_sha256: handleSha256 }).update(changes)),
    takeRequest: async (handleSha256) => (await db('oauth_requests').where({ handle_sha256: handleSha256 }).del()) === 1,
    addGrant: (row, limits) => addGrant(db, row, limits),
    grant: async (id) => {
      const raw = await db('oauth_grants').where({ id }).first();
      return raw ? grantRow(raw) : undefined;
    },
    grantByCode: async (codeSha256) => {
      const raw = await db('oauth_grants').where({ code_sha256: codeSha256 }).first();
      return raw ? grantRow(raw) : undefined;
    },
    grantByAccessToken: async (accessSha256) => {
      const raw = await first(readRows<Record<string, unknown>>(SELECT_GRANT_BY_ACCESS, [accessSha256]));
      return raw ? grantRow(raw) : undefined;
    },
    redeemCode: (codeSha256, now, tokens) => redeemCode(db, codeSha256, now, tokens),
    rotateTokens: (grantId, refreshSha256, now, tokens) => rotateTokens(db, grantId, refreshSha256, now, tokens),
    revokeGrant: async (grantId, now) =>
      void (await db('oauth_grants').where({ id: grantId }).whereNull('revoked_at').update({ revoked_at: now })),
  };
}
