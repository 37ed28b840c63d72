import type { ApiKeyScope } from '../core/api-key.js';

/** Hono variables set by the auth middleware. */
export interface ServerEnv {
  Variables: {
    /** The API key's tenant, or undefined when the server runs without keys. */
    tenant: string | undefined;
    /**
     * Who the request counts against for the limits: `key:<n>` with API keys, undefined without (routes then use
     * the tenant).
     */
    principal: string | undefined;
    /** What the API key may do; undefined without keys or for a key given no scopes (everything). */
    scopes: ReadonlySet<ApiKeyScope> | undefined;
  };
}
