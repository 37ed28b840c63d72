// @ts-check
// The inspector's own addresses (hash routes), each id encoded as one segment.

/**
 * @param {string} tenant
 * @param {string} conversation
 * @param {string} agent
 */
export function scopeHref(tenant, conversation, agent) {
  return `#/scope/${[tenant, conversation, agent].map(encodeURIComponent).join('/')}`;
}

/** @param {string} runId */
export function runHref(runId) {
  return `#/run/${encodeURIComponent(runId)}`;
}

/**
 * The runs list, optionally filtered.
 * @param {{ conversation_id?: string, agent_id?: string, status?: string, tenant_id?: string }} [filters]
 */
export function runsHref(filters = {}) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value) query.set(name, value);
  const text = query.toString();
  return `#/runs${text === '' ? '' : `?${text}`}`;
}

/**
 * The start of an id, enough to tell runs apart in a table (the full id is its title).
 * @param {string} id
 */
export function shortId(id) {
  return id.length > 16 ? `${id.slice(0, 16)}…` : id;
}
