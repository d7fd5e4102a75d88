import type { Permission } from '../auth/principal.ts';
import { loadSpec } from './spec.ts';

/** The permission each operation of the contract requires (`x-permission`), by operationId. */
export const permissionByOperation: ReadonlyMap<string, Permission> = new Map(
  Object.values<Record<string, any>>(loadSpec().paths).flatMap((item) =>
    Object.values<any>(item)
      .filter((operation) => operation?.operationId && operation['x-permission'])
      .map((operation) => [operation.operationId as string, operation['x-permission'] as Permission] as const),
  ),
);
