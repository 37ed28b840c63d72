/** Hono variables set by the auth middleware. */
export interface ServerEnv {
  Variables: {
    /** The API key's tenant, or undefined when the server runs without keys. */
    tenant: string | undefined;
  };
}
