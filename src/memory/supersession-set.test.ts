/**
 * The supersession set across reflections (issue 12): found once, kept and applied at every
 * snippet; the reflector shown earlier observations still in force, within a bound set by
 * the configuration.
 */
import { describe, expect, it } from 'vitest';
import { maxReflectorInputTokens } from '../core/memory-prompts.js';
import { statusToJson } from '../core/memory-status.js';
import type { ObservationConfig } from '../core/observation.js';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { createModelReflector } from './model-observer.js';
import type { Observer, Reflector } from './model-observer.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemoryEvent } from './observational-memory.js';

const scope = { tenantId: 'tenant-s', conversationId: 'conv-long', agentId: 'agent-x' };
const WIDTH = 72;
const TABS = 'User prefers tabs for indentation in every file.';
const SPACES = 'User now prefers spaces for indentation, not tabs.';

/** What run `run` teaches, padded to one width so every observation costs the same. */
function fact(run: number): { text: string; importance: number } {
  if (run === 10) return { text: TABS.padEnd(WIDTH, '.'), importance: 0.9 };
  if (run === 40) return { text: SPACES.padEnd(WIDTH, '.'), importance: 0.9 };
  return {
    text: (
      `Run ${String(run).padStart(2, '0')}: worked on module ${String(run).padStart(2, '0')} and its ` + `unit tests`
    ).padEnd(WIDTH, '.'),
    importance: 0.5,
  };
}

/**
 * A reflector model that reads its prompt as a model would: when it sees both the tabs and
 * the spaces observations, it says once that spaces replaced tabs, and never again.
 */
function reflectorModel() {
  let said = false;
  return createMockLanguageModel((options) => {
    const prompt = options.messages.at(-1)?.content ?? '';
    const seqOf = (text: string): number | undefined => {
      const line = prompt.split('\n').find((candidate) => candidate.includes(text.slice(0, 30)));
      const match = /\[seq:(\d+)\]/.exec(line ?? '');
      return match ? Number(match[1]) : undefined;
    };
    const tabs = seqOf(TABS);
    const spaces = seqOf(SPACES);
    const supersession =
      !said && tabs !== undefined && spaces !== undefined
        ? `- [seq:${spaces}] replaces [seq:${tabs}]: the user switched to spaces`
        : '';
    if (supersession !== '') said = true;
    return `SUMMARY:\nA long coding session over many modules.\n\nSUPERSESSIONS:\n${supersession}\n\nCONTRADICTIONS:\n`;
  });
}

/** Memory whose observer turns "run N" into the one observation `factOf(N)`, reflected by `model`. */
function memoryOfRuns(
  factOf: (run: number) => { text: string; importance: number },
  model: ReturnType<typeof createMockLanguageModel>,
  config: ObservationConfig,
) {
  const observer = scriptedObserver((input) => {
    const run = Number(/run (\d+)/.exec(input.messages[0]?.content ?? '')?.[1]);
    const { text, importance } = factOf(run);
    return `IMPORTANCE: ${importance}\n${text}`;
  });
  return createObservationalMemory({
    store: createInMemoryStore(),
    observer,
    reflector: createModelReflector(model),
    defaultEnabled: true,
    defaults: config,
  });
}

/** Memory on an in-memory store that observes every message, with these models. */
function memoryObservingEach(observer: Observer, reflector: Reflector) {
  return createObservationalMemory({
    store: createInMemoryStore(),
    observer,
    reflector,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1 },
  });
}

describe('observational memory: the supersession set (issue 12)', () => {
  it(
    'keeps a supersession found in the second of three reflections over 60 runs, and the reflector input ' +
      'within its bound',
    async () => {
      const observationTokens = RUNE_TOKEN_ESTIMATOR.estimate(fact(1).text);
      // Twenty observations of equal cost make a reflection: at runs 20, 40 and 60.
      const config: ObservationConfig = {
        observeMinTokens: 1,
        snippetMaxTokens: 3000,
        reflectThresholdTokens: observationTokens * 20 - 1,
      };
      const model = reflectorModel();
      const memory = memoryOfRuns(fact, model, config);
      for (let run = 1; run <= 60; run++) {
        await memory.observe({
          scope,
          runId: `run-${run}`,
          messages: [{ id: `u${run}`, role: 'user', content: `run ${run}: please continue` }],
        });
      }
      expect(model.calls).toHaveLength(3);

      // The memory-model input of each reflection, as sent, stays under the bound the configuration sets.
      const bound = maxReflectorInputTokens(config);
      for (const call of model.calls) {
        const sent = call.messages.map((message) => message.content).join('\n');
        expect(RUNE_TOKEN_ESTIMATOR.estimate(sent)).toBeLessThanOrEqual(bound);
      }
      // The second reflection saw the old preference, reflected by the first, as one reference line.
      const second = model.calls[1]?.messages.at(-1)?.content ?? '';
      expect(second).toContain('Earlier observations still in force');
      expect(second).toMatch(/- \[seq:10\] User prefers tabs/);
      // Superseded observations are no longer offered as references.
      const third = model.calls[2]?.messages.at(-1)?.content ?? '';
      expect(third).not.toMatch(/- \[seq:10\] User prefers tabs/);

      const snippet = await memory.snippet(scope);
      const lines = snippet.split('\n');
      expect(lines.filter((line) => line.includes('prefers tabs'))).toEqual([
        `- [10] (superseded by [40]) ${fact(10).text}`,
      ]);
      expect(lines.filter((line) => line.includes('prefers spaces'))).toEqual([`- [40] ${fact(40).text}`]);
      expect(snippet).toContain(
        '⚠️ Preference changes (most recent wins):\n- the user switched to spaces (observation [40] supersedes [10])',
      );
      const status = await memory.status(scope);
      expect(status).toMatchObject({ activeSupersessions: 1, activeContradictions: 0, rejectedReferences: 0 });
      const inspection = await memory.inspect(scope);
      expect(inspection.links.supersessions.map((item) => [item.newerSeq, item.olderSeq])).toEqual([[40, 10]]);
      // The latest reflection did not repeat it: the stored set kept it.
      expect(inspection.reflection?.structured.supersessions).toEqual([]);
    },
  );

  it(
    'keeps the reflector input within its bound with tiny observations, markup-heavy text and a huge ' + 'reflection',
    async () => {
      const config: ObservationConfig = { observeMinTokens: 1, snippetMaxTokens: 120, reflectThresholdTokens: 60 };
      // Each reflection answers with about 60 KB, and every observation is short and full of `<`.
      const model = createMockLanguageModel(`SUMMARY:\n${'<b>'.repeat(20_000)}\nSUPERSESSIONS:\nCONTRADICTIONS:\n`);
      let call = 0;
      const observer = scriptedObserver(() =>
        Array.from({ length: 40 }, (_, index) => `IMPORTANCE: 0.9\n<x${call++}${index}>`).join('\n\n'),
      );
      const memory = createObservationalMemory({
        store: createInMemoryStore(),
        observer,
        reflector: createModelReflector(model),
        defaultEnabled: true,
        defaults: config,
      });
      for (let run = 0; run < 12; run++)
        await memory.observe({ scope, messages: [{ id: `m${run}`, role: 'user', content: `run ${run}` }] });
      expect(model.calls.length).toBeGreaterThanOrEqual(3);
      for (const sent of model.calls) {
        const text = sent.messages.map((message) => message.content).join('\n');
        expect(RUNE_TOKEN_ESTIMATOR.estimate(text)).toBeLessThanOrEqual(maxReflectorInputTokens(config));
      }
    },
  );

  it(
    'shows an open contradiction, with both its observations however old and unimportant, to later ' +
      'reflections, so one can settle it',
    async () => {
      const TUESDAY = 'Deploys go out on Tuesdays.';
      const THURSDAY = 'Deploys go out on Thursdays.';
      const CONFIRMED = 'The user confirmed that deploys go out on Thursdays.';
      const factOf = (run: number): { text: string; importance: number } => {
        const text =
          run === 2 ? TUESDAY : run === 3 ? THURSDAY : run === 30 ? CONFIRMED : `Run ${run}: worked on module ${run}.`;
        return { text: text.padEnd(WIDTH, '.'), importance: run === 2 || run === 3 ? 0.3 : 0.5 };
      };
      const observationTokens = RUNE_TOKEN_ESTIMATOR.estimate(factOf(1).text);
      const config: ObservationConfig = {
        observeMinTokens: 1,
        // The snippet holds six observations: the two old ones at 0.3 are never among them.
        snippetMaxTokens: observationTokens * 6,
        reflectThresholdTokens: observationTokens * 20 - 1,
      };
      // A reflector model that cites only what its prompt shows: it flags the two deploy days
      // as conflicting, and settles it once it sees both of them and the user's confirmation.
      const model = createMockLanguageModel((options) => {
        const prompt = options.messages.at(-1)?.content ?? '';
        const seqOf = (text: string): number | undefined => {
          const line = prompt
            .split('\n')
            .find((candidate) => candidate.startsWith('- [seq:') && candidate.includes(text));
          const match = /\[seq:(\d+)\]/.exec(line ?? '');
          return match ? Number(match[1]) : undefined;
        };
        const [tuesday, thursday, confirmed] = [seqOf(TUESDAY), seqOf(THURSDAY), seqOf(CONFIRMED)];
        const settled =
          tuesday !== undefined && confirmed !== undefined
            ? `- [seq:${confirmed}] replaces [seq:${tuesday}]: the user confirmed Thursdays`
            : '';
        const conflict =
          settled === '' && tuesday !== undefined && thursday !== undefined
            ? `- [seq:${thursday}] vs [seq:${tuesday}]: which day deploys go out`
            : '';
        return `SUMMARY:\nA coding session.\n\nSUPERSESSIONS:\n${settled}\n\nCONTRADICTIONS:\n${conflict}\n`;
      });
      const memory = memoryOfRuns(factOf, model, config);
      const observeRun = (run: number) =>
        memory.observe({ scope, messages: [{ id: `u${run}`, role: 'user', content: `run ${run}: continue` }] });
      for (let run = 1; run <= 20; run++) await observeRun(run);
      expect(model.calls).toHaveLength(1);
      expect(await memory.snippet(scope)).toContain(
        '⚠️ Unresolved contradictions:\n- which day deploys go out (observations [2] vs [3]) — confirm which applies',
      );

      for (let run = 21; run <= 40; run++) await observeRun(run);
      expect(model.calls).toHaveLength(2);
      const second = model.calls[1]?.messages.at(-1)?.content ?? '';
      expect(second).toContain(
        'Open contradictions (one line each, clipped):\n<existing-memory>\n- [seq:2] vs [seq:3]: which day deploys go out\n</existing-memory>',
      );
      expect(second).toMatch(/- \[seq:2\] Deploys go out on Tuesdays/);
      expect(RUNE_TOKEN_ESTIMATOR.estimate(second)).toBeLessThanOrEqual(maxReflectorInputTokens(config));

      const snippet = await memory.snippet(scope);
      expect(snippet).not.toContain('Unresolved contradictions');
      // Neither [30] nor [2] is among the observations shown: the snippet does not list the change.
      expect(snippet).not.toContain('supersedes [2]');
      expect(await memory.status(scope)).toMatchObject({
        activeContradictions: 0,
        activeSupersessions: 1,
        rejectedReferences: 0,
      });
    },
  );

  it('ranks the superseded observation at 0.1 in every later snippet', async () => {
    const observer = scriptedObserver(
      'IMPORTANCE: 1.0\nUser prefers tabs.',
      'IMPORTANCE: 0.3\nUser now prefers spaces.',
      ...Array.from({ length: 4 }, (_, index) => `IMPORTANCE: 0.2\nMinor note ${index}.`),
    );
    const reflector = scriptedReflector(
      'SUMMARY:\ns\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: switched\nCONTRADICTIONS:\n',
      'SUMMARY:\ns\nSUPERSESSIONS:\nCONTRADICTIONS:\n',
    );
    const memory = createObservationalMemory({
      store: createInMemoryStore(),
      observer,
      reflector,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1, snippetMaxTokens: 95 },
    });
    await memory.observe({ scope, messages: [{ id: 'a', role: 'user', content: 'tabs please' }] });
    await memory.observe({ scope, messages: [{ id: 'b', role: 'user', content: 'spaces now' }] });
    await memory.reflectNow(scope);
    for (let index = 0; index < 4; index++)
      await memory.observe({ scope, messages: [{ id: `n${index}`, role: 'user', content: `note ${index}` }] });
    // A second reflection that does not repeat the supersession: it stays in force.
    await memory.reflectNow(scope);
    const snippet = await memory.snippet(scope);
    // Importance 1.0 would outrank every other line; clamped to 0.1 it is left out first.
    expect(snippet).not.toContain('prefers tabs');
    expect(snippet).toContain('(observation [2] supersedes [1])');
    expect(snippet).toContain('[2] User now prefers spaces.');
  });

  it('keeps the last summary when a reflection reports supersessions under an empty one, and applies them', async () => {
    const observer = scriptedObserver(
      'IMPORTANCE: 0.9\nUser prefers tabs.',
      'IMPORTANCE: 0.9\nUser now prefers spaces.',
    );
    const reflector = scriptedReflector(
      'SUMMARY:\nA session about indentation.\nSUPERSESSIONS:\nCONTRADICTIONS:\n',
      'SUMMARY:\n\nSUPERSESSIONS:\n- **[seq:2] replaces [seq:1]**: switched to spaces\nCONTRADICTIONS:\n',
      'SUMMARY:\nNone.\nSUPERSESSIONS:\nCONTRADICTIONS:\n',
    );
    const memory = memoryObservingEach(observer, reflector);
    await memory.observe({ scope, messages: [{ id: 'a', role: 'user', content: 'tabs' }] });
    await memory.reflectNow(scope);
    await memory.observe({ scope, messages: [{ id: 'b', role: 'user', content: 'spaces now' }] });
    await memory.reflectNow(scope);
    const inspection = await memory.inspect(scope);
    expect(inspection.reflection?.structured.summary).toBe('A session about indentation.');
    expect(inspection.reflection?.raw).toBe(
      'SUMMARY:\nA session about indentation.\n\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: switched to spaces\n\nCONTRADICTIONS:',
    );
    expect(inspection.links.supersessions.map((item) => [item.newerSeq, item.olderSeq])).toEqual([[2, 1]]);
    // Nothing under an empty summary is still refused, the last reflection kept.
    await expect(memory.reflectNow(scope)).rejects.toMatchObject({ code: 'MODEL_OUTPUT_INVALID' });
    expect((await memory.inspect(scope)).reflection?.structured.summary).toBe('A session about indentation.');
  });

  it('drops references that do not hold and counts them in the status', async () => {
    const observer = scriptedObserver('IMPORTANCE: 0.5\nfirst', 'IMPORTANCE: 0.5\nsecond', 'IMPORTANCE: 0.5\nthird');
    const reflector = scriptedReflector(
      [
        'SUMMARY:',
        's',
        'SUPERSESSIONS:',
        '- [seq:3] replaces [seq:2]: fine',
        '- [seq:1] replaces [seq:3]: backwards in time',
        '- [seq:12] replaces [seq:1]: no such seq',
        'CONTRADICTIONS:',
        '- [seq:1] vs [seq:3]: fine',
        '- [seq:2] vs [seq:2]: itself',
        '- [seq:1] vs [seq:2]: resolved by nothing yet',
      ].join('\n'),
      'SUMMARY:\ns\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: now resolves 1 vs 2\nCONTRADICTIONS:\n',
    );
    const memory = memoryObservingEach(observer, reflector);
    for (const id of ['a', 'b', 'c']) await memory.observe({ scope, messages: [{ id, role: 'user', content: id }] });
    await memory.reflectNow(scope);
    let status = await memory.status(scope);
    // Two contradictions are stored; "1 vs 2" is resolved already, 2 being superseded by 3.
    expect(status).toMatchObject({ activeSupersessions: 1, activeContradictions: 1, rejectedReferences: 3 });
    expect(statusToJson(status)).toMatchObject({
      active_supersessions: 1,
      active_contradictions: 1,
      rejected_references: 3,
    });
    expect((await memory.inspect(scope)).links.contradictions.map((item) => [item.seqA, item.seqB])).toEqual([[1, 3]]);
    await memory.reflectNow(scope);
    status = await memory.status(scope);
    // Superseding 1 resolves "1 vs 3" too.
    expect(status).toMatchObject({ activeSupersessions: 2, activeContradictions: 0, rejectedReferences: 3 });
    const exported = JSON.parse((await memory.export(scope, 'json')).content);
    expect(
      exported.reflection_links.supersessions.map((item: { newer_seq: number; older_seq: number }) => [
        item.newer_seq,
        item.older_seq,
      ]),
    ).toEqual([
      [2, 1],
      [3, 2],
    ]);
    expect(exported.reflection_links.contradictions).toEqual([]);
    expect((await memory.export(scope, 'markdown')).content).toContain(
      '## Supersessions\n\n- [2] replaces [1]: now resolves 1 vs 2\n- [3] replaces [2]: fine',
    );
  });
});

describe('observational memory: the supersession set after a deletion', () => {
  it('leaves out supersessions and contradictions naming a deleted observation, in the snippet, status and export', async () => {
    const observer = scriptedObserver(
      'IMPORTANCE: 0.5\nUser prefers tabs.',
      'IMPORTANCE: 0.5\nUser lives in Lyon.',
      'IMPORTANCE: 0.5\nUser switched to spaces.',
      'IMPORTANCE: 0.5\nUser lives in Paris.',
    );
    const reflector = scriptedReflector(
      'SUMMARY:\nx\n\nSUPERSESSIONS:\n- [seq:3] replaces [seq:1]: switched to spaces\n\n' +
        'CONTRADICTIONS:\n- [seq:4] vs [seq:2]: which city',
    );
    const memory = memoryObservingEach(observer, reflector);
    for (const id of ['a', 'b', 'c', 'd'])
      await memory.observe({ scope, messages: [{ id, role: 'user', content: id }] });
    await memory.reflectNow(scope);
    expect(await memory.status(scope)).toMatchObject({ activeSupersessions: 1, activeContradictions: 1 });
    // The user deletes both newer observations as mistakes.
    await memory.deleteObservation(scope, 3);
    const { status } = await memory.deleteObservation(scope, 4);
    expect(status).toMatchObject({ activeSupersessions: 0, activeContradictions: 0 });
    const snippet = await memory.snippet(scope);
    expect(snippet).toContain('User prefers tabs.');
    expect(snippet).not.toContain('superseded');
    expect(snippet).not.toContain('which city');
    expect(snippet).not.toContain('switched to spaces');
    const exported = JSON.parse((await memory.export(scope, 'json')).content);
    expect(exported.reflection_links).toEqual({ supersessions: [], contradictions: [] });
    const page = await memory.observationPage(scope);
    expect(page.items.find((item) => item.seq === 1)).not.toHaveProperty('supersededBy', 3);
  });
});

describe('observational memory: a reflection in Markdown headings, exported', () => {
  it('keeps its headings below its own section, so the export has one Supersessions and one Contradictions', async () => {
    const observer = scriptedObserver('IMPORTANCE: 0.5\nfirst', 'IMPORTANCE: 0.5\nsecond');
    const reflector = scriptedReflector(
      '## Summary\nTwo facts.\n\n## Supersessions\n- [seq:2] replaces [seq:1]: newer\n\n## Contradictions\nNone.',
    );
    const memory = memoryObservingEach(observer, reflector);
    for (const id of ['a', 'b']) await memory.observe({ scope, messages: [{ id, role: 'user', content: id }] });
    await memory.reflectNow(scope);
    const markdown = (await memory.export(scope, 'markdown')).content;
    expect(markdown.match(/^## Supersessions$/gm)).toHaveLength(1);
    expect(markdown.match(/^## Contradictions$/gm)).toHaveLength(1);
    expect(markdown).toContain('## Reflection\n\n> ### Summary\n> Two facts.');
    expect(markdown).toContain('## Supersessions\n\n- [2] replaces [1]: newer');
  });
});

describe('observational memory: observe events on the scope (issue 12)', () => {
  it('reports every observe operation with its scope and run, also a failed one', async () => {
    const events: ObservationalMemoryEvent[] = [];
    const observer = scriptedObserver('IMPORTANCE: 0.5\nfine', new Error('observer down'));
    const memory = createObservationalMemory({
      store: createInMemoryStore(),
      observer,
      defaultEnabled: true,
      maxAttempts: 1,
      defaults: { observeMinTokens: 1 },
    });
    memory.subscribe((event) => events.push(event));
    await memory.observe({ scope, runId: 'run-a', messages: [{ id: 'a', role: 'user', content: 'a' }] });
    await expect(
      memory.observe({ scope, runId: 'run-b', messages: [{ id: 'b', role: 'user', content: 'b' }] }),
    ).rejects.toThrow(/observer down/);
    const observeEvents = events.filter((event) => event.type.startsWith('memory.observe.'));
    expect(
      observeEvents.map((event) => [
        event.type,
        'runId' in event ? event.runId : '',
        'scope' in event ? event.scope.conversationId : '',
      ]),
    ).toEqual([
      ['memory.observe.started', 'run-a', 'conv-long'],
      ['memory.observe.completed', 'run-a', 'conv-long'],
      ['memory.observe.started', 'run-b', 'conv-long'],
      ['memory.observe.failed', 'run-b', 'conv-long'],
    ]);
    expect(observeEvents[1]).toMatchObject({
      status: 'applied',
      observed: true,
      reflected: false,
      observationCount: 1,
    });
  });
});

describe('observational memory: subscribers', () => {
  it('completes an observation whose subscriber throws', async () => {
    const memory = createObservationalMemory({
      store: createInMemoryStore(),
      observer: scriptedObserver('IMPORTANCE: 0.5\nnoted'),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    memory.subscribe(() => {
      throw new Error('subscriber broke');
    });
    expect(
      await memory.observe({ scope, runId: 'run-x', messages: [{ id: 'a', role: 'user', content: 'a' }] }),
    ).toMatchObject({ status: 'applied', observed: true });
  });
});

describe('observational memory: forget and generations (issue 12)', () => {
  it('stores nothing from an observe holding the generation from before a forget', async () => {
    const observer = scriptedObserver('IMPORTANCE: 0.5\nnoted');
    const store = createInMemoryStore();
    const memory = createObservationalMemory({
      store,
      observer,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    const generation = await memory.generation(scope);
    await memory.observe({ scope, messages: [{ id: 'a', role: 'user', content: 'secret plan' }], generation });
    await memory.forget(scope);
    const late = await memory.observe({
      scope,
      messages: [
        { id: 'a', role: 'user', content: 'secret plan' },
        { id: 'b', role: 'user', content: 'more' },
      ],
      generation,
    });
    expect(late).toMatchObject({ status: 'skipped', reason: 'forgotten' });
    expect((await memory.inspect(scope)).observations).toEqual([]);
    expect(await store.getRecord((await memory.status(scope)).memoryId)).toBeUndefined();
    const fresh = await memory.generation(scope);
    expect(fresh).not.toBe(generation);
    expect(
      await memory.observe({ scope, messages: [{ id: 'c', role: 'user', content: 'after' }], generation: fresh }),
    ).toMatchObject({ status: 'applied' });
  });
});

describe('observational memory: a supersession of a repeated fact', () => {
  it('reaches the copy the snippet shows when the reflector cites the older copy', async () => {
    const observer = scriptedObserver(
      'IMPORTANCE: 0.9\nUser prefers tabs.',
      'IMPORTANCE: 0.9\nUser prefers tabs.',
      'IMPORTANCE: 0.9\nUser prefers spaces now.',
    );
    const reflector = scriptedReflector(
      'SUMMARY:\nThe user switched from tabs to spaces.\n\nSUPERSESSIONS:\n- [seq:3] replaces [seq:1]: switched to spaces',
    );
    const memory = createObservationalMemory({
      store: createInMemoryStore(),
      observer,
      reflector,
      defaultEnabled: true,
      defaults: { observeMinTokens: 1, reflectThresholdTokens: 15 },
    });
    for (const id of ['a', 'b', 'c']) {
      await memory.observe({ scope, messages: [{ id, role: 'user', content: id }] });
      await memory.drain(scope);
    }
    expect(reflector.calls).toHaveLength(1);
    const snippet = await memory.snippet(scope);
    expect(snippet).toContain('- [2] (superseded by [3]) User prefers tabs.\n- [3] User prefers spaces now.');
    expect(snippet).toContain('- switched to spaces (observation [3] supersedes [2])');
    expect(snippet).not.toContain('[1]');
    const page = await memory.observationPage(scope);
    const bySeq = new Map(page.items.map((item) => [item.seq, item]));
    expect(bySeq.get(2)).toMatchObject({ included: true, supersededBy: 3 });
    expect(bySeq.get(2)?.score).toBeCloseTo(0.1 / 2);
    expect(bySeq.get(1)).toMatchObject({ included: false, notShownBecause: 'repeated' });
  });
});
