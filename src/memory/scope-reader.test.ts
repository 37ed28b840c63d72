import { describe, expect, it } from 'vitest';
import { createInMemoryStore } from '../storage/in-memory-store.js';
import type { MemoryStore } from '../storage/store.js';
import { scriptedObserver } from '../../test/support/scripted-models.js';
import { createObservationalMemory } from './observational-memory.js';

const scope = { tenantId: 't', conversationId: 'c-reader', agentId: 'a' };

/** An in-memory store that logs when record reads and observation listings start and end. */
function loggingStore(): { store: MemoryStore; log: string[] } {
  const inner = createInMemoryStore();
  const log: string[] = [];
  const logged =
    <A extends unknown[], R>(name: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      log.push(`${name} start`);
      // A turn of the event loop, as a network read would take: what runs beside shows.
      await new Promise((resolve) => setImmediate(resolve));
      const result = await call(...args);
      log.push(`${name} end`);
      return result;
    };
  const store: MemoryStore = {
    ...inner,
    getRecord: logged('record', (id: string) => inner.getRecord(id)),
    listObservations: logged('list', (id: string, options?: { afterSeq?: number }) =>
      inner.listObservations(id, options),
    ),
  };
  return { store, log };
}

describe('scope reader: the observations another writer added are read beside the record (issue 16)', () => {
  it('lists them beside the record once another writer was met, and stops when that finds nothing', async () => {
    const { store, log } = loggingStore();
    const options = { store, observer: scriptedObserver(''), defaultEnabled: true };
    const reader = createObservationalMemory(options);
    const writer = createObservationalMemory(options);
    const fresh = async () => createObservationalMemory(options).snippet(scope);
    const read = async (): Promise<string[]> => {
      log.length = 0;
      const text = await reader.snippet(scope);
      const reads = [...log];
      expect(text).toBe(await fresh());
      return reads;
    };
    const imported = (word: string) => writer.importObservations(scope, [{ content: `fact ${word}`, importance: 0.5 }]);

    await imported('one');
    // First read: the record, then every observation.
    expect(await read()).toEqual(['record start', 'record end', 'list start', 'list end']);
    // Another writer's observation: read after the record (this reader learns of the writer).
    await imported('two');
    expect(await read()).toEqual(['record start', 'record end', 'list start', 'list end']);
    // The next one is listed beside the record, and nothing is read after.
    await imported('three');
    expect(await read()).toEqual(['record start', 'list start', 'record end', 'list end']);
    await imported('four');
    expect(await read()).toEqual(['record start', 'list start', 'record end', 'list end']);
    // Nothing new: the listing beside found nothing, so the next read is the record alone.
    expect(await read()).toEqual(['record start', 'list start', 'record end', 'list end']);
    expect(await read()).toEqual(['record start', 'record end']);
    // A write of the reader's own service is held as it is applied: no listing, no flag.
    await reader.importObservations(scope, [{ content: 'fact five', importance: 0.5 }]);
    expect(await read()).toEqual(['record start', 'record end']);
    expect((await reader.inspect(scope)).observations.map((item) => item.content)).toEqual([
      'fact one',
      'fact two',
      'fact three',
      'fact four',
      'fact five',
    ]);
  });
});
