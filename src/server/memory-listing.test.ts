import { describe, expect, it } from 'vitest';
import { createTestApp, useTestWorkspace } from '../../test/support/test-app.js';
import type { AppOptions } from './app.js';

const WORKSPACE = useTestWorkspace('hm-listing-');
const setup = (apiKeys?: AppOptions['apiKeys']) =>
  createTestApp({ workspace: WORKSPACE, memory: { defaultEnabled: true }, ...(apiKeys ? { apiKeys } : {}) });

const keys = [
  { key: 'key-a', tenantId: 'tenant-a' },
  { key: 'key-b', tenantId: 'tenant-b' },
];

describe('server: memory listing and correction', () => {
  it('lists only the key tenant scopes, with counts, paged by next_cursor', async () => {
    const { request, observationalMemory, workingMemory } = setup(keys);
    for (const conversationId of ['c1', 'c2', 'c3']) {
      await observationalMemory.importObservations({ tenantId: 'tenant-a', conversationId, agentId: 'a' }, [
        { content: `fact of ${conversationId}` },
      ]);
    }
    await workingMemory.set({ tenantId: 'tenant-a', conversationId: 'c9', agentId: 'a' }, 'plan', 'ship');
    await observationalMemory.importObservations({ tenantId: 'tenant-b', conversationId: 'secret', agentId: 'a' }, [
      { content: 'tenant b only' },
    ]);
    const first = await request('/v1/memory?limit=2', { key: 'key-a' });
    expect(first.status).toBe(200);
    expect(first.body['items'].map((item: any) => item.conversation_id)).toEqual(['c1', 'c2']);
    expect(first.body['items'][0]).toMatchObject({
      tenant_id: 'tenant-a',
      enabled: true,
      observations: 1,
      working_memory_entries: 0,
      pending_operations: 0,
      dead_operations: 0,
    });
    const second = await request(`/v1/memory?limit=2&cursor=${first.body['next_cursor']}`, { key: 'key-a' });
    expect(second.body['items'].map((item: any) => [item.conversation_id, item.working_memory_entries])).toEqual([
      ['c3', 0],
      ['c9', 1],
    ]);
    expect(second.body['next_cursor']).toBeNull();
    // The query cannot reach another tenant: the key decides, and naming another is refused.
    const other = await request('/v1/memory?tenant_id=tenant-b', { key: 'key-a' });
    expect(other.status).toBe(400);
    expect(other.body['error']['message']).toBe('tenant_id does not match the tenant of the API key');
    expect(JSON.stringify(other.body)).not.toContain('secret');
    const own = await request('/v1/memory?tenant_id=tenant-a&limit=1', { key: 'key-a' });
    expect(own.body['items'].map((item: any) => item.conversation_id)).toEqual(['c1']);
    const searched = await request('/v1/memory?q=C3', { key: 'key-a' });
    expect(searched.body['items'].map((item: any) => item.conversation_id)).toEqual(['c3']);
  });

  it.each([
    ['/v1/memory?limit=500', 'limit'],
    ['/v1/memory?limit=abc', 'limit'],
    ['/v1/memory?cursor=%%%', 'cursor'],
    ['/v1/memory?enabled=maybe', 'enabled'],
    ['/v1/memory/t/c/a/operations?status=lost', 'status'],
  ])('answers %s with 400 naming %s', async (path, field) => {
    const { request } = setup();
    const response = await request(path);
    expect(response.status).toBe(400);
    expect(response.body['error']['message']).toContain(field);
  });

  it('says why an observation is not shown: a newer repeat, the budget, memory off', async () => {
    const { request, observationalMemory } = setup();
    const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };
    await observationalMemory.importObservations(scope, [
      { content: 'The user likes tabs.', importance: 0.9 },
      ...Array.from({ length: 100 }, (_, index) => ({
        content: `Filler fact number ${index} about the project, long enough to cost a few tokens.`,
        importance: 0.5,
      })),
      { content: 'the user likes tabs', importance: 0.9 },
    ]);
    const items = async (): Promise<any[]> => (await request('/v1/memory/t/c/a/observations?limit=200')).body['items'];
    const bySeq = new Map((await items()).map((item) => [item.seq, item]));
    expect(bySeq.get(1)).toMatchObject({ included: false, cut_by_budget: false, not_shown_because: 'repeated' });
    expect(bySeq.get(102)).toMatchObject({ included: true, cut_by_budget: false, not_shown_because: null });
    expect(bySeq.get(2)).toMatchObject({ included: false, cut_by_budget: true, not_shown_because: 'budget' });
    await observationalMemory.setEnabled(scope, false);
    for (const item of await items())
      expect(item).toMatchObject({ included: false, cut_by_budget: false, not_shown_because: 'memory_off' });
  });

  it('pages observations with their selection view, corrects and deletes one, and logs both', async () => {
    const { request, observationalMemory } = setup();
    const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };
    await observationalMemory.importObservations(scope, [
      { content: 'The user lives in Oslo.', importance: 0.8 },
      { content: 'The user likes tea.' },
    ]);
    const page = await request('/v1/memory/t/c/a/observations?limit=1');
    expect(page.body['items']).toHaveLength(1);
    expect(page.body['items'][0]).toMatchObject({
      seq: 2,
      included: true,
      cut_by_budget: false,
      superseded_by: null,
      recency: 0,
      source: 'import',
    });
    const rest = await request(`/v1/memory/t/c/a/observations?cursor=${page.body['next_cursor']}`);
    expect(rest.body['items'].map((item: any) => item.seq)).toEqual([1]);

    const fixed = await request('/v1/memory/t/c/a/observations/1', {
      method: 'PATCH',
      body: JSON.stringify({ content: 'The user lives in Bergen.' }),
    });
    expect(fixed.status).toBe(200);
    expect(fixed.body['observation']).toMatchObject({ seq: 1, content: 'The user lives in Bergen.', importance: 0.8 });
    const removed = await request('/v1/memory/t/c/a/observations/2', { method: 'DELETE' });
    expect(removed.body).toMatchObject({ deleted: true, seq: 2 });
    const scopeView = await request('/v1/memory/t/c/a');
    expect(scopeView.body['snippets']['observational_memory']).toContain('Bergen');
    expect(scopeView.body['snippets']['observational_memory']).not.toContain('tea');
    expect(scopeView.body['progress']).toMatchObject({ observing: false, reflecting: false, snippet_max_tokens: 900 });
    expect(scopeView.body['progress']['snippet_tokens']).toBeGreaterThan(0);

    const log = await request('/v1/memory/t/c/a/operations?limit=2');
    expect(log.body['items'].map((item: any) => [item.operation_type, item.payload.action])).toEqual([
      ['correct', 'delete'],
      ['correct', 'replace'],
    ]);
    const missing = await request('/v1/memory/t/c/a/observations/2', { method: 'DELETE' });
    expect(missing.status).toBe(404);
    expect(missing.body['error']['code']).toBe('observation_not_found');
    // Refused as the library refuses them: observation_invalid, naming the field.
    for (const [path, body, field] of [
      ['1', { content: '' }, 'content'],
      ['1', { content: 'x', importance: 2 }, 'importance'],
      ['abc', { content: 'x' }, 'seq'],
    ] as const) {
      const bad = await request(`/v1/memory/t/c/a/observations/${path}`, {
        method: 'PATCH',
        body: JSON.stringify(body),
      });
      expect(bad.status).toBe(400);
      expect(bad.body['error']).toMatchObject({ code: 'observation_invalid' });
      expect(bad.body['error']['message']).toContain(field);
    }
    const badDelete = await request('/v1/memory/t/c/a/observations/-1', { method: 'DELETE' });
    expect(badDelete.body['error']).toMatchObject({ code: 'observation_invalid' });
  });

  it('changes an importance alone when PATCH leaves content out, keeping the text; neither is observation_invalid', async () => {
    const { request, observationalMemory } = setup();
    await observationalMemory.importObservations({ tenantId: 't', conversationId: 'c', agentId: 'a' }, [
      { content: 'The deploy is on Friday.', importance: 0.2 },
    ]);
    const changed = await request('/v1/memory/t/c/a/observations/1', {
      method: 'PATCH',
      body: JSON.stringify({ importance: 0.9 }),
    });
    expect(changed.status).toBe(200);
    expect(changed.body['observation']).toMatchObject({ seq: 1, content: 'The deploy is on Friday.', importance: 0.9 });
    const neither = await request('/v1/memory/t/c/a/observations/1', { method: 'PATCH', body: '{}' });
    expect(neither.status).toBe(400);
    expect(neither.body['error']).toMatchObject({ code: 'observation_invalid' });
    expect(neither.body['error']['message']).toContain('content');
    const unknown = await request('/v1/memory/t/c/a/observations/1', {
      method: 'PATCH',
      body: JSON.stringify({ importance: 0.5, text: 'x' }),
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body['error']).toMatchObject({ code: 'invalid_request' });
  });

  it('hides another tenant scope from a key: its observations and operations are 404', async () => {
    const { request, observationalMemory } = setup(keys);
    await observationalMemory.importObservations({ tenantId: 'tenant-b', conversationId: 'c', agentId: 'a' }, [
      { content: 'tenant b fact' },
    ]);
    for (const [path, method] of [
      ['/v1/memory/tenant-b/c/a/observations', 'GET'],
      ['/v1/memory/tenant-b/c/a/operations', 'GET'],
      ['/v1/memory/tenant-b/c/a/observations/1', 'DELETE'],
    ] as const) {
      const response = await request(path, { key: 'key-a', method });
      expect(response.status).toBe(404);
      expect(JSON.stringify(response.body)).not.toContain('tenant b fact');
    }
    expect((await request('/v1/memory/tenant-b/c/a/observations', { key: 'key-b' })).body['items']).toHaveLength(1);
  });
});
