import type { CreateKeyResponse } from '../../generated/types.ts';
import { permit, PERMISSIONS, type Principal } from '../auth/principal.ts';
import type { Clock } from '../base/clock.ts';
import { RequestValidator } from '../contract/request-validator.ts';
import { loadSpec } from '../contract/spec.ts';
import type { OperationContext } from '../operations/context.ts';
import { runOperation } from '../operations/registry.ts';
import type { Store } from '../store/port.ts';

const schemas = loadSpec().components.schemas;
const keyRequest = schemas.CreateKeyRequest.properties;

/**
 * What `key create` checks its options against before it runs: the contract's own constraints
 * (MailboxId's pattern, CreateKeyRequest's bounds), so the command's messages can name the option
 * at fault while saying what the API says.
 */
export const KEY_REQUEST_LIMITS = {
  mailboxId: new RegExp(schemas.MailboxId.pattern as string, 'u'),
  maxMailboxes: keyRequest.mailboxes.maxItems as number,
  labelLength: { min: keyRequest.label.minLength as number, max: keyRequest.label.maxLength as number },
} as const;

/** The operator at the command line: the whole workspace, every permission (what only the CLI can give: the first admin key comes from here). */
const operatorOf = (workspaceId: string): Principal => ({
  keyId: 'operator',
  workspaceId,
  permissions: new Set(PERMISSIONS),
  mailboxes: null,
});

/**
 * `event-feed key create`: the create_key operation (createApiKey) run for the operator, so a key
 * made here passes the API's validation (the contract's CreateKeyRequest, through RequestValidator),
 * counts against the same per-workspace limit (MAX_ACTIVE_KEYS_PER_WORKSPACE) and fails with the
 * same errors.
 */
export async function createKeyAsOperator(
  store: Store,
  clock: Clock,
  workspaceId: string,
  request: Record<string, unknown>,
): Promise<CreateKeyResponse> {
  const checked = new RequestValidator().check('create_key', request);
  // Through the registry like every call; create_key uses only the store and the clock of its context.
  const ctx = { store, clock, principal: permit(operatorOf(workspaceId), 'admin') } as Partial<OperationContext<'admin'>>;
  return (await runOperation('create_key', ctx as OperationContext<'admin'>, checked)).result;
}
