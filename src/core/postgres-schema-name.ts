/**
 * What a Postgres schema of the stores may be named: checked by the config at load and by the
 * Postgres stores when opened, with the same rule.
 * @module
 */

/** A plain lower-case identifier (the stores splice it into SQL, quoted). */
export const POSTGRES_SCHEMA_PATTERN: RegExp = /^[a-z_][a-z0-9_]{0,62}$/;

/** Why Postgres keeps `name` for itself, or `undefined` when a store may use it. */
export function reservedSchemaProblem(name: string): string | undefined {
  if (name.startsWith('pg_'))
    return 'must not start with "pg_", which Postgres reserves for its own schemas (it refuses to create one)';
  if (name === 'information_schema')
    return 'must not be "information_schema", which Postgres keeps for its catalog views and pg_dump skips';
  return undefined;
}
