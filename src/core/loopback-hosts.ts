/**
 * The host names that mean this machine, as a `Host` header or a listen address writes them.
 * @module
 */

/** `localhost`, `127.0.0.1` and `::1` (bare, and bracketed as in a URL). */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);
