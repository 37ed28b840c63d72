import { describe, expect, it } from 'vitest';
import { scriptedObserver } from '../../test/support/scripted-models.js';
import { memoryIdOf } from '../core/scope.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createObservationalMemory } from './observational-memory.js';

const AWS_SECRET = `wJalrXUtnFEMIK7MDENG${'bPxRfiCYEXAMPLEKEY12'}`;
const scope = { tenantId: 't', conversationId: 'c-worker', agentId: 'a' };

describe('operation worker: the error text it stores', () => {
  it('is redacted before it is cut at 2,000 characters, so no part of a secret is left', async () => {
    const store = createInMemoryStore();
    const memory = createObservationalMemory({
      store,
      observer: scriptedObserver(new Error(`${'x'.repeat(1960)} aws_secret_access_key=${AWS_SECRET}`)),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
      maxOperationAttempts: 3,
      retryDelayMs: 60_000,
    });
    await memory
      .observe({ scope, runId: 'r', messages: [{ id: 'm1', role: 'user', content: 'I prefer tabs.' }] })
      .catch(() => undefined);
    const operation = (await store.listOperations(memoryIdOf(scope))).at(-1);
    expect(operation?.errorText).toContain('xxxx');
    expect(operation?.errorText.length).toBeLessThanOrEqual(2000);
    expect(operation?.errorText).not.toContain('wJalrXUtn');
  });
});
