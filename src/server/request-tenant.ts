/**
 * The tenant a request acts for, from its API key or, without keys, from what it names.
 * @module
 */
import { validateScopeId } from '../core/scope.js';
import { httpError } from './http-error.js';

/**
 * With an API key, the key's tenant: a request that names another (`tenant_id` in its body
 * or query) is refused with `400 invalid_request` rather than answered for the key's tenant,
 * which a client listing "another" tenant would take for that tenant's data. Without keys
 * (loopback only), the tenant the request names, checked, or `default`.
 */
export function requestTenant(keyTenant: string | undefined, named: string | undefined): string {
  if (keyTenant === undefined) return validateScopeId('tenant_id', named || 'default');
  if (named !== undefined && named !== '' && named !== keyTenant)
    throw httpError(400, 'invalid_request', 'tenant_id does not match the tenant of the API key');
  return keyTenant;
}
