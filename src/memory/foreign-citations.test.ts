/**
 * Memory-model output citing another scope's messages or observations (the reliability
 * catalogue's F46): seqs are numbered per scope, so an observer's `SOURCE:` line is read only
 * against the batch it was shown and a reflector's `[seq:N]` only against the observations its
 * prompt showed. A citation outside them is dropped (observer) or counted as a rejected
 * reference (reflector); the other scope, which does hold those seqs, is left as it was.
 */
import { describe, expect, it } from 'vitest';
import { memoryIdOf, resolveScope } from '../core/scope.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import { scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import type { ObserverInput } from './model-observer.js';
import { createObservationalMemory } from './observational-memory.js';

const OURS = { tenantId: 'acme', conversationId: 'conv-a', agentId: 'agent-x' };
const THEIRS = { tenantId: 'globex', conversationId: 'conv-b', agentId: 'agent-x' };
const THEIR_MESSAGES = 30;

describe('observational memory: citations of another scope', () => {
  const files = useSqliteTestFiles('hm-foreign-citations-');

  it("drops an observer's citations outside its batch and a reflector's references outside its prompt; the other scope is untouched", async () => {
    const store = files.track(createSqliteStore({ path: files.path }));
    const theirMemoryId = memoryIdOf(resolveScope(THEIRS));
    // Our scope's observer cites its own message 1 beside seqs only the other scope has, and
    // names the other scope's storage key; the other scope's observer cites its own messages.
    const observer = scriptedObserver((input: ObserverInput) =>
      input.messages.length === THEIR_MESSAGES
        ? 'IMPORTANCE: 0.5\nSOURCE: 3, 4\nGlobex plans a merger.'
        : [
            'IMPORTANCE: 0.8',
            'SOURCE: 1, 25, 30',
            'The user moved the launch to Friday.',
            '',
            'IMPORTANCE: 0.9',
            'SOURCE: 27, 29',
            `The plan of ${theirMemoryId} is a merger.`,
          ].join('\n'),
    );
    const reflector = scriptedReflector(
      'SUMMARY:\nThe launch is on Friday.\n\nSUPERSESSIONS:\n- [seq:25] replaces [seq:1]: a newer plan\n' +
        '- [seq:2] replaces [seq:1]: restated\n\nCONTRADICTIONS:\n- [seq:28] vs [seq:1]: the other plan',
    );
    const memory = createObservationalMemory({
      store,
      observer,
      reflector,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1, reflectThresholdTokens: 1_000_000 },
    });

    await memory.observe({
      scope: THEIRS,
      messages: Array.from({ length: THEIR_MESSAGES }, (_, index) => ({
        id: `theirs-${index + 1}`,
        role: 'user',
        content: `Globex message ${index + 1}: the merger is on.`,
      })),
    });
    const theirsBefore = await memory.inspect(THEIRS);
    expect(theirsBefore.observations.map((item) => item.sourceMessageSeqs)).toEqual([[3, 4]]);

    await memory.observe({
      scope: OURS,
      messages: [
        { id: 'ours-1', role: 'user', content: 'Move the launch to Friday.' },
        { id: 'ours-2', role: 'assistant', content: 'Done: the launch is on Friday.' },
      ],
    });
    const ours = await memory.inspect(OURS);
    expect(
      ours.observations.map((item) => ({ seq: item.seq, cites: item.sourceMessageSeqs, source: item.source })),
    ).toEqual([
      { seq: 1, cites: [1], source: 'user' },
      // Cites nothing of its batch: its source is the batch's roles, as for an uncited one.
      { seq: 2, cites: [], source: 'mixed' },
    ]);
    // The other scope's key is only text in ours.
    expect(ours.observations[1]?.content).toBe(`The plan of ${theirMemoryId} is a merger.`);

    await memory.reflectNow(OURS);
    const reflected = await memory.inspect(OURS);
    // [seq:25] and [seq:28] name observations our reflector was never shown (ours has two);
    // only [seq:2] replaces [seq:1] holds.
    expect(reflected.status.activeSupersessions).toBe(1);
    expect(reflected.status.activeContradictions).toBe(0);
    expect(reflected.status.rejectedReferences).toBe(2);
    expect(reflected.links.supersessions.map((item) => [item.newerSeq, item.olderSeq])).toEqual([[2, 1]]);

    expect(await memory.inspect(THEIRS)).toEqual(theirsBefore);
  });
});
