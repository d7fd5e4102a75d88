import { hasTrait, OPERATION_IDS, type OperationId, type OperationIdWith } from '../../generated/operations.ts';
import type { Permission } from '../../generated/types.ts';
import { loadSpec } from './spec.ts';

/** An operation of the contract: where it is served and what it requires. */
export interface ContractOperation {
  operationId: OperationId;
  method: string;
  path: string;
  /** `x-permission`: what a key needs to call it. */
  permission: Permission;
  /** `x-wait-max-seconds`, on an operation that may be held: the longest `Prefer: wait` it honours. */
  waitMaxSeconds?: number;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
const OPERATIONS = new Set<string>(OPERATION_IDS);
const isOperationId = (id: unknown): id is OperationId => typeof id === 'string' && OPERATIONS.has(id);

/** Every operation of the contract that takes a JSON body (generated/openapi.json), read once. */
export const contractOperations: readonly ContractOperation[] = Object.entries<Record<string, any>>(loadSpec().paths).flatMap(
  ([path, item]) =>
    Object.entries<any>(item)
      .filter(([method, operation]) => HTTP_METHODS.has(method) && isOperationId(operation?.operationId))
      .map(([method, operation]) => ({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        path,
        permission: operation['x-permission'] as Permission,
        ...(operation['x-wait-max-seconds'] === undefined ? {} : { waitMaxSeconds: operation['x-wait-max-seconds'] as number }),
      })),
);

const byId = new Map(contractOperations.map((operation) => [operation.operationId, operation]));
const byPath = new Map<string, ContractOperation[]>();
for (const operation of contractOperations) byPath.set(operation.path, [...(byPath.get(operation.path) ?? []), operation]);

/** The operation with this id (a tool's name, say), or undefined when the contract has none. */
export const operationById = (operationId: string): ContractOperation | undefined =>
  isOperationId(operationId) ? byId.get(operationId) : undefined;

/**
 * The operation served at this method and path; `methodNotAllowed` when the path exists with other
 * methods. The contract's paths have no parameters: a route is an exact path (a trailing slash
 * aside, as clients add one).
 */
export function routeOf(method: string, path: string): { operation?: ContractOperation; allowed: string[] } {
  const operations = byPath.get(path) ?? byPath.get(path.endsWith('/') ? path.slice(0, -1) : `${path}/`) ?? [];
  return {
    operation: operations.find((operation) => operation.method === method),
    allowed: operations.map((operation) => operation.method),
  };
}

/** A GET path that streams an operation's reads to a browser's EventSource, and that operation. */
export interface StreamRoute {
  path: string;
  operation: ContractOperation & { operationId: OperationIdWith<'mayStream'> };
  /** The query string's parameters the GET declares (its stream token, the operation's own), in the contract's order. */
  queryParameters: readonly string[];
}

/** Every GET path of the contract with `x-stream-of` (naming an operation that may stream: event_feed), read once. */
export const streamRoutes: readonly StreamRoute[] = Object.entries<Record<string, any>>(loadSpec().paths).flatMap(([path, item]) => {
  const operationId: unknown = item.get?.['x-stream-of'];
  if (operationId === undefined) return [];
  if (!isOperationId(operationId) || !hasTrait(operationId, 'mayStream') || !byId.has(operationId)) {
    throw new Error(`${path}: x-stream-of must name an operation of the contract with x-may-stream`);
  }
  const queryParameters = (item.get.parameters ?? [])
    .filter((parameter: any) => parameter?.in === 'query')
    .map((parameter: any) => String(parameter.name));
  return [{ path, operation: { ...byId.get(operationId)!, operationId }, queryParameters }];
});

/** The GET path that streams an operation's reads to a browser's EventSource (`x-stream-of` names the operation: event_feed), from the contract. */
export function streamPathOf(operationId: OperationId): string {
  const route = streamRoutes.find((candidate) => candidate.operation.operationId === operationId);
  if (!route) throw new Error(`the contract has no GET path with x-stream-of: ${operationId}`);
  return route.path;
}
