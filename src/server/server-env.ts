import type { ApiKeyScope } from '../core/api-key.js';

/** Hono variables set by the auth middleware, and what the server passes with each request. */
export interface ServerEnv {
  Bindings: {
    /**
     * Set by `startServer` when it listens beyond loopback without API keys (`insecure`): the
     * Host check, which keeps browsers of a loopback-only server from DNS rebinding, then
     * serves every host name the server is reached by.
     */
    openToAnyHost?: boolean;
  };
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
