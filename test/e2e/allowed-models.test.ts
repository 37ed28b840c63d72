/**
 * `[server] allowed_models`: a tenant's run names only a model the operator allows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

let e2e: E2E;

beforeAll(async () => {
  e2e = await startE2E({ env: { HARNESS_ALLOWED_MODELS: 'small-model' } });
}, 60_000);

afterAll(async () => {
  await e2e?.close();
});

describe('e2e: allowed models', () => {
  it('refuses a run naming another model with 400 invalid_request, and starts one naming an allowed one or none', async () => {
    const refused = await e2e.apiJson('/v1/runs', {
      method: 'POST',
      body: JSON.stringify({ prompt: 'hi', conversation_id: 'allowed', model: 'o1-pro' }),
    });
    expect(refused.status).toBe(400);
    expect(refused.body['error']).toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('model "o1-pro" is not allowed on this server'),
    });
    for (const body of [{ model: 'small-model' }, {}]) {
      const runId = await e2e.startRun({ prompt: 'hi', conversation_id: 'allowed', ...body });
      const frames = await e2e.events(runId);
      expect(frames.at(-1)?.event).toBe('run.completed');
    }
    const { body: runs } = await e2e.apiJson('/v1/runs?conversation_id=allowed');
    expect(runs['items']).toHaveLength(2);
  });
});
