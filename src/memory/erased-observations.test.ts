/**
 * A deleted or corrected observation is gone from what was derived from it: the reflection
 * that covers it is taken out of force, the links naming it dropped, and no later reflection
 * is given the old text to carry forward, in this process or another.
 */
import { describe, expect, it } from 'vitest';
import type { ObservationConfig } from '../core/observation.js';
import { OUTDATED_REFLECTION_NOTE } from '../storage/correction-plan.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { createModelReflector } from './model-observer.js';
import type { Observer, Reflector } from './model-observer.js';
import { createObservationalMemory } from './observational-memory.js';

const scope = { tenantId: 'tenant-e', conversationId: 'conv-erase', agentId: 'agent-x' };

/** A reflector model that does what its prompt asks: carry the existing reflection forward, add the new observations. */
function carryingReflectorModel() {
  return createMockLanguageModel((options) => {
    const prompt = String(options.messages.at(-1)?.content ?? '');
    const existing = /Existing reflection:\n<existing-memory>\n([\s\S]*?)\n<\/existing-memory>/.exec(prompt)?.[1] ?? '';
    const fresh = /New observations:\n<observations>\n([\s\S]*?)\n<\/observations>/.exec(prompt)?.[1] ?? '';
    const carried = existing.replace(/^SUMMARY:\s*/, '').trim();
    const added = fresh
      .split('\n')
      .map((line) => line.replace(/^- \[seq:\d+\] /, ''))
      .join(' ');
    return `SUMMARY:\n${[carried, added].filter((part) => part !== '').join(' ')}`;
  });
}

function memoryOn(store: MemoryStore, observer: Observer, reflector: Reflector, defaults: Partial<ObservationConfig>) {
  return createObservationalMemory({
    store,
    observer,
    reflector,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1, ...defaults },
  });
}

describe('observational memory: a deleted or corrected observation leaves the reflection', () => {
  it('shows neither in the snippet nor in any later reflector prompt, and the next reflection does not bring it back', async () => {
    const observer = scriptedObserver(
      'IMPORTANCE: 0.9\nUser lives in Berlin.\n\nIMPORTANCE: 0.8\nUser prefers spaces.',
      'IMPORTANCE: 0.7\nUser uses Go for all backend work.',
    );
    const model = carryingReflectorModel();
    // One reflection covers both observations of the first observe.
    const memory = memoryOn(createInMemoryStore(), observer, createModelReflector(model), {
      reflectThresholdTokens: 5,
    });
    await memory.observe({
      scope,
      runId: 'r',
      messages: [{ id: 'm1', role: 'user', content: 'I live in Berlin and prefer spaces.' }],
    });
    await memory.drain(scope);
    expect(model.calls).toHaveLength(1);
    expect(await memory.snippet(scope)).toContain('> User lives in Berlin. User prefers spaces.');

    await memory.deleteObservation(scope, 1);
    const { status } = await memory.correctObservation(scope, 2, { content: 'User prefers tabs.' });
    expect(status).toMatchObject({ reflectionPresent: false, observationCount: 1 });
    const snippet = await memory.snippet(scope);
    expect(snippet).toContain('- [2] User prefers tabs.');
    expect(snippet).not.toContain('Reflection:');
    expect(snippet).not.toMatch(/Berlin|spaces/);
    expect((await memory.inspect(scope)).reflection).toBeNull();
    for (const format of ['json', 'markdown'] as const)
      expect((await memory.export(scope, format)).content).not.toMatch(/Berlin|spaces/);

    await memory.observe({
      scope,
      runId: 'r',
      messages: [{ id: 'm2', role: 'user', content: 'Also, I use Go for all backend work.' }],
    });
    await memory.drain(scope);
    // The observer was not shown the old reflection either.
    expect(observer.calls[1]?.reflection).toBeNull();
    expect(model.calls).toHaveLength(2);
    const prompt = String(model.calls[1]?.messages.at(-1)?.content);
    expect(prompt).not.toContain('Existing reflection:');
    expect(prompt).not.toMatch(/Berlin|spaces/);
    expect(prompt).toContain('[seq:2] User prefers tabs.');
    const after = await memory.snippet(scope);
    expect(after).toContain('> User prefers tabs. User uses Go for all backend work.');
    expect(after).not.toMatch(/Berlin|spaces/);
  });

  it('drops a supersession whose reason was about the corrected observation', async () => {
    const observer = scriptedObserver(
      'IMPORTANCE: 0.9\nUser prefers tabs.\n\nIMPORTANCE: 0.9\nUser switched to spaces.',
    );
    const reflector = scriptedReflector(
      'SUMMARY:\nThe user now prefers spaces.\n\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: switched to spaces\n\n' +
        'CONTRADICTIONS:\n',
    );
    const memory = memoryOn(createInMemoryStore(), observer, reflector, { reflectThresholdTokens: 100_000 });
    await memory.observe({ scope, runId: 'r', messages: [{ id: 'm1', role: 'user', content: 'tabs, then spaces' }] });
    await memory.reflectNow(scope);
    expect(await memory.snippet(scope)).toContain('(superseded by [2])');

    const { status } = await memory.correctObservation(scope, 2, {
      content: 'User prefers tabs (the spaces remark was about YAML only).',
    });
    expect(status).toMatchObject({ activeSupersessions: 0, reflectionPresent: false });
    const snippet = await memory.snippet(scope);
    expect(snippet).toContain('- [1] User prefers tabs.');
    expect(snippet).toContain('- [2] User prefers tabs (the spaces remark was about YAML only).');
    expect(snippet).not.toMatch(/superseded|switched to spaces|now prefers spaces/);
    expect((await memory.inspect(scope)).links).toEqual({ supersessions: [], contradictions: [] });
  });

  describe('across processes (two services, two connections to one SQLite file)', () => {
    const files = useSqliteTestFiles('erased-observations');

    it('serves no cached snippet, reflection or supersession from before the correction', async () => {
      const observer = scriptedObserver(
        'IMPORTANCE: 0.9\nUser prefers tabs.\n\nIMPORTANCE: 0.9\nUser switched to spaces.',
        'IMPORTANCE: 0.9\nUser uses vim.',
      );
      const reflector = scriptedReflector(
        'SUMMARY:\nThe user now prefers spaces.\n\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: switched to spaces\n',
        'SUMMARY:\nThe user uses vim.\n\nSUPERSESSIONS:\n- [seq:3] replaces [seq:1]: now vim\n',
      );
      const config = { reflectThresholdTokens: 100_000 };
      const writer = memoryOn(files.track(createSqliteStore({ path: files.path })), observer, reflector, config);
      const reader = memoryOn(
        files.track(createSqliteStore({ path: files.path })),
        scriptedObserver('NONE'),
        scriptedReflector('SUMMARY:\nunused'),
        config,
      );
      await writer.observe({ scope, runId: 'r', messages: [{ id: 'm1', role: 'user', content: 'tabs, then spaces' }] });
      await writer.reflectNow(scope);
      const before = await reader.snippet(scope);
      expect(before).toContain('> The user now prefers spaces.');
      expect(before).toContain('switched to spaces (observation [2] supersedes [1])');

      await writer.correctObservation(scope, 2, { content: 'User prefers tabs for Go code.' });
      const corrected = await reader.snippet(scope);
      expect(corrected).not.toMatch(/Reflection:|spaces/);
      expect(corrected).toContain('- [2] User prefers tabs for Go code.');

      // A new supersession gives the set the counts it had before the correction: the reader
      // must not take its cached set for this one.
      await writer.observe({ scope, runId: 'r', messages: [{ id: 'm2', role: 'user', content: 'I use vim.' }] });
      await writer.reflectNow(scope);
      const later = await reader.snippet(scope);
      expect(later).toContain('now vim (observation [3] supersedes [1])');
      expect(later).not.toMatch(/spaces/);
      expect(await reader.snippet(scope)).toBe(await writer.snippet(scope));
    });
  });

  it('stores nothing of a reflection that was running when another process deleted an observation it was shown', async () => {
    const store = createInMemoryStore();
    const observer = scriptedObserver('IMPORTANCE: 0.9\nUser lives in Berlin.\n\nIMPORTANCE: 0.5\nUser uses Go.');
    let shown!: () => void;
    const reflectorShown = new Promise<void>((resolve) => {
      shown = resolve;
    });
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const reflector = scriptedReflector(
      async (input) => {
        shown();
        await answered;
        return `SUMMARY:\n${input.observations.map((observation) => observation.content).join(' ')}`;
      },
      (input) => `SUMMARY:\n${input.observations.map((observation) => observation.content).join(' ')}`,
    );
    const config = { reflectThresholdTokens: 100_000 };
    const reflecting = memoryOn(store, observer, reflector, config);
    const inspector = memoryOn(store, scriptedObserver('NONE'), scriptedReflector('SUMMARY:\nunused'), config);
    await reflecting.observe({ scope, runId: 'r', messages: [{ id: 'm1', role: 'user', content: 'Berlin; Go' }] });

    const pending = reflecting.reflectNow(scope);
    await reflectorShown;
    await inspector.deleteObservation(scope, 1);
    answer();
    expect((await pending).reflected).toBe(false);
    expect(await reflecting.snippet(scope)).not.toContain('Berlin');
    expect((await store.getRecord((await reflecting.inspect(scope)).status.memoryId))?.reflection).toBeNull();
    const log = (await reflecting.inspect(scope)).operations;
    expect(log.find((operation) => operation.operationType === 'reflect_now')).toMatchObject({
      status: 'applied',
      errorText: OUTDATED_REFLECTION_NOTE,
    });

    expect((await reflecting.reflectNow(scope)).reflected).toBe(true);
    expect(reflector.calls[1]?.reflection).toBeNull();
    const snippet = await reflecting.snippet(scope);
    expect(snippet).toContain('> User uses Go.');
    expect(snippet).not.toContain('Berlin');
  });
});
