import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import * as snippets from '../core/observation-snippet.js';
import type { Observation, StoredReflection } from '../core/observation.js';
import { parseReflection } from '../core/parse-reflection.js';
import { EMPTY_REFLECTION_LINKS } from '../core/reflection-links.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import { createPostgresStore } from '../storage/postgres/index.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../../test/support/postgres-schema.js';
import { scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { seededRandom } from '../../test/support/seeded-random.js';
import { createObservationalMemory } from './observational-memory.js';
import type { ObservationalMemory } from './observational-memory.js';
import { SnippetMemo } from './snippet-memo.js';
import type { SnippetInputs } from './snippet-memo.js';

// The real builder, counted: a reuse is a snippet served without building it.
vi.mock('../core/observation-snippet.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../core/observation-snippet.js')>();
  return { ...actual, buildObservationSnippet: vi.fn(actual.buildObservationSnippet) };
});
const builds = vi.mocked(snippets.buildObservationSnippet);

const scope = { tenantId: 'tenant-a', conversationId: 'conv-1', agentId: 'agent-x' };

const observation = (seq: number): Observation => ({
  seq,
  content: `fact ${seq}`,
  tokenCount: 3,
  importance: 0.5,
  source: 'mixed',
  sourceStartSeq: seq,
  sourceEndSeq: seq,
  sourceMessageSeqs: [],
  createdAt: '2026-12-04T00:00:00.000Z',
  operationId: 'op',
});

const reflection = (summary: string, overrides: Partial<StoredReflection> = {}): StoredReflection => {
  const raw = `SUMMARY:\n${summary}\n`;
  return { raw, structured: parseReflection(raw), tokenCount: 5, throughSeq: 2, createdAt: 't1', ...overrides };
};

describe('SnippetMemo', () => {
  const observations = [observation(1), observation(2)];
  const inputs: SnippetInputs = {
    observations,
    links: EMPTY_REFLECTION_LINKS,
    reflection: reflection('Tabs.'),
    maxTokens: 500,
  };

  it('gives the held text back only for the very inputs it was built from', () => {
    const memo = new SnippetMemo();
    memo.hold('s', inputs, 'text');
    // A reflection read again is a new object with the same values.
    expect(memo.find('s', { ...inputs, reflection: reflection('Tabs.') })).toBe('text');
    expect(memo.find('other', inputs)).toBeUndefined();
    expect(memo.find('s', { ...inputs, observations: [...observations] })).toBeUndefined();
    expect(memo.find('s', { ...inputs, links: { ...EMPTY_REFLECTION_LINKS } })).toBeUndefined();
    expect(memo.find('s', { ...inputs, maxTokens: 501 })).toBeUndefined();
    expect(memo.find('s', { ...inputs, reflection: null })).toBeUndefined();
    expect(memo.find('s', { ...inputs, reflection: reflection('Spaces.') })).toBeUndefined();
    for (const change of [{ throughSeq: 3 }, { createdAt: 't2' }, { tokenCount: 6 }, { raw: 'SUMMARY:\nTabs.' }])
      expect(memo.find('s', { ...inputs, reflection: reflection('Tabs.', change) })).toBeUndefined();
    const reparsed = reflection('Tabs.', { structured: parseReflection('SUMMARY:\nSpaces.\n') });
    expect(memo.find('s', { ...inputs, reflection: reparsed })).toBeUndefined();
  });

  it('misses once the held array grew, and after a delete', () => {
    const memo = new SnippetMemo();
    const growing = [observation(1)];
    memo.hold('s', { ...inputs, observations: growing }, 'one');
    expect(memo.find('s', { ...inputs, observations: growing })).toBe('one');
    growing.push(observation(2));
    expect(memo.find('s', { ...inputs, observations: growing })).toBeUndefined();
    memo.hold('s', { ...inputs, observations: growing }, 'two');
    memo.delete('s');
    expect(memo.find('s', { ...inputs, observations: growing })).toBeUndefined();
  });

  it('does not keep alive an observation array nothing else holds', async () => {
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const memo = new SnippetMemo();
    let collected = false;
    const registry = new FinalizationRegistry(() => {
      collected = true;
    });
    ((): void => {
      const dropped = Array.from({ length: 1_000 }, (_, index) => observation(index + 1));
      registry.register(dropped, 'observations');
      memo.hold('s', { ...inputs, observations: dropped }, 'text');
    })();
    for (let attempt = 0; attempt < 50 && !collected; attempt++) {
      collect();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(collected).toBe(true);
  });

  it('holds at most its limit of scopes, dropping the least recently held', () => {
    const memo = new SnippetMemo(2);
    for (const id of ['a', 'b', 'c']) memo.hold(id, inputs, id);
    expect(['a', 'b', 'c'].map((id) => memo.find(id, inputs))).toEqual([undefined, 'b', 'c']);
  });
});

describe('observational memory: the snippet of a state that changed nothing it shows', () => {
  const directories: string[] = [];
  afterEach(() => {
    for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
  });

  const service = (store: MemoryStore): ObservationalMemory =>
    createObservationalMemory({
      store,
      observer: scriptedObserver('IMPORTANCE:0.5\nUnused'),
      reflector: scriptedReflector('SUMMARY:\nUnused.\n'),
      defaultEnabled: true,
      // Every observe only appends: observations come from imports.
      defaults: { observeMinTokens: 1_000_000 },
    });
  let messageCounter = 0;
  const append = (memory: ObservationalMemory) =>
    memory.observe({ scope, messages: [{ id: `m${++messageCounter}`, role: 'user', content: 'Another turn.' }] });

  it('is served without building it again after a turn only appended messages', async () => {
    const memory = service(createInMemoryStore());
    await memory.importObservations(scope, [{ content: 'The user prefers tabs.', importance: 0.9 }]);
    const first = await memory.snippet(scope);
    expect(first).toContain('The user prefers tabs.');
    builds.mockClear();
    for (let turn = 0; turn < 5; turn++) {
      expect((await append(memory)).reason).toBe('below_threshold');
      expect(await memory.snippet(scope)).toBe(first);
    }
    expect(builds).not.toHaveBeenCalled();
    await memory.importObservations(scope, [{ content: 'The deploy window is Thursday.', importance: 0.8 }]);
    expect(await memory.snippet(scope)).toContain('The deploy window is Thursday.');
    expect(builds).toHaveBeenCalledTimes(1);
  });

  /**
   * A long-lived service (its caches warm) against a fresh one after every step of a random
   * mix of writes by another service on the store: the snippets are always equal.
   */
  const equalsFresh = async (reader: MemoryStore, writer: MemoryStore, seed: number): Promise<number> => {
    const random = seededRandom(seed);
    const kept = service(reader);
    let reflections = 0;
    const other = createObservationalMemory({
      store: writer,
      observer: scriptedObserver('IMPORTANCE:0.5\nUnused'),
      reflector: scriptedReflector(async (input) => {
        const seqs = input.observations.map((item) => item.seq);
        const [older, newer] = [seqs[0], seqs.at(-1)];
        const supersession =
          older !== undefined && newer !== undefined && older !== newer && random() < 0.5
            ? `- [seq:${newer}] replaces [seq:${older}]: changed its mind`
            : '';
        return `SUMMARY:\nReflection ${++reflections}.\n\nSUPERSESSIONS:\n${supersession}\n\nCONTRADICTIONS:\n`;
      }),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1_000_000 },
    });
    let reused = 0;
    for (let step = 0; step < 150; step++) {
      const seqs = (await other.inspect(scope)).observations.map((item) => item.seq);
      const pick = random.below(100);
      if (pick < 40) await append(random() < 0.5 ? kept : other);
      else if (pick < 60)
        await other.importObservations(
          scope,
          Array.from({ length: 1 + random.below(3) }, (_, index) => ({
            content: `Fact ${step}.${index}`,
            importance: random() < 0.2 ? null : Math.round(random() * 100) / 100,
          })),
        );
      else if (pick < 68 && seqs.length > 0)
        await other.correctObservation(scope, seqs[random.below(seqs.length)] as number, {
          content: `Corrected at ${step}`,
        });
      else if (pick < 74 && seqs.length > 0)
        await other.deleteObservation(scope, seqs[random.below(seqs.length)] as number);
      else if (pick < 82) await other.reflectNow(scope);
      else if (pick < 90) await other.setEnabled(scope, true, { snippetMaxTokens: [60, 200, 2_000][random.below(3)] });
      else if (pick < 94) await other.setEnabled(scope, random() < 0.5);
      else if (pick < 96) await other.forget(scope);
      builds.mockClear();
      const served = await kept.snippet(scope);
      if (builds.mock.calls.length === 0) reused++;
      expect(served, `step ${step}`).toBe(await service(reader).snippet(scope));
    }
    return reused;
  };

  it('equals a fresh service on every step of 150 random writes, on one in-memory store', async () => {
    const store = createInMemoryStore();
    expect(await equalsFresh(store, store, 5)).toBeGreaterThan(20);
  });

  it('equals a fresh service on every step of 150 random writes, over two connections to one SQLite file', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'hm-snippet-memo-'));
    directories.push(directory);
    const path = join(directory, 'memory.db');
    const reader = createSqliteStore({ path });
    const writer = createSqliteStore({ path });
    try {
      expect(await equalsFresh(reader, writer, 6)).toBeGreaterThan(20);
    } finally {
      await writer.dispose();
      await reader.dispose();
    }
  });

  const url = postgresTestUrl();
  const schemas = url ? createPostgresTestSchemas(url) : undefined;
  afterAll(async () => {
    await schemas?.dropAll();
  });
  it.skipIf(!url)(
    'equals a fresh service on every step of 150 random writes, across two Postgres replicas',
    async () => {
      const schema = schemas?.next() ?? '';
      const reader = await createPostgresStore({ connectionString: url ?? '', schema, max: 2 });
      const writer = await createPostgresStore({ connectionString: url ?? '', schema, max: 2 });
      try {
        expect(await equalsFresh(reader, writer, 7)).toBeGreaterThan(20);
      } finally {
        await writer.dispose();
        await reader.dispose();
      }
    },
  );
});
