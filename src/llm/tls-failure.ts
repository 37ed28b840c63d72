/**
 * Telling a TLS failure that no retry can mend (a certificate this machine does not trust, one
 * for another name or out of date, or a server that does not speak TLS at that port) from a
 * connection that failed for now.
 * @module
 */

/** Node's codes for certificates it refuses. */
const CERTIFICATE_CODES: ReadonlySet<string> = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Node's code for an answer that is not TLS: an `https://` URL for a plain HTTP port. */
const NOT_TLS_CODE = 'ERR_SSL_WRONG_VERSION_NUMBER';

/** How deep the `cause` chain is followed: the SDK wraps fetch's error, which wraps the socket's. */
const MAX_CAUSE_DEPTH = 8;

/** A TLS failure found along an error's causes: Node's code and what to do about it. */
export interface TlsFailure {
  readonly code: string;
  readonly remedy: string;
}

/** The TLS failure along `error`'s causes, or `undefined` when it is not one. */
export function tlsFailureOf(error: unknown, depth = 0): TlsFailure | undefined {
  if (typeof error !== 'object' || error === null || depth > MAX_CAUSE_DEPTH) return undefined;
  const code = (error as { code?: unknown }).code;
  if (code === NOT_TLS_CODE)
    return { code, remedy: 'The server does not speak TLS at that port: use http:// if it is a plain HTTP server.' };
  if (typeof code === 'string' && CERTIFICATE_CODES.has(code))
    return {
      code,
      remedy:
        "This machine does not accept the server's certificate: give Node its CA (NODE_EXTRA_CA_CERTS=/path/ca.pem) " +
        'or check the host name in the base URL.',
    };
  return tlsFailureOf((error as { cause?: unknown }).cause, depth + 1);
}
