import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { memoryIdOf } from '../core/scope.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createLocalEventHub } from '../storage/local-event-hub.js';
import type { RunStore } from '../storage/run-store.js';
import { newRun } from '../storage/run-store.suite.js';
import { streamRunEvents } from './sse.js';

const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };

async function startedRun(runStore: RunStore): Promise<void> {
  await runStore.createRun({ ...newRun('run_1'), status: 'running' });
  await runStore.appendEvent('run_1', 'run.started', {});
}

/** The stream's frames, read to its end. */
async function framesOf(
  runStore: RunStore,
  hub: ReturnType<typeof createLocalEventHub>,
  heartbeatMs: number,
  headers: Record<string, string> = {},
) {
  const app = new Hono();
  app.get('/events', (context) => streamRunEvents(context, { runId: 'run_1', runStore, hub, heartbeatMs }));
  const response = await app.request('/events', { headers });
  return (await response.text()).split('\n\n').filter((frame) => frame !== '');
}

describe('run event stream', () => {
  it('drops a client that stopped reading once a frame waits past writeTimeoutMs, freeing its slot', async () => {
    const runStore = createInMemoryRunStore();
    await startedRun(runStore);
    for (let index = 0; index < 20; index++) await runStore.appendEvent('run_1', 'assistant.message', { index });
    let closed!: () => void;
    const closedOnce = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const app = new Hono();
    const hub = createLocalEventHub();
    app.get('/events', (context) =>
      streamRunEvents(context, {
        runId: 'run_1',
        runStore,
        hub,
        heartbeatMs: 3_600_000,
        writeTimeoutMs: 20,
        onClose: closed,
      }),
    );
    const response = await app.request('/events');
    // Nothing reads the body: the frames back up and the stream must end on its own.
    await closedOnce;
    expect(response.status).toBe(200);
    await response.body?.cancel();
  });

  it('ends with an error frame once the run was deleted with its forgotten conversation', async () => {
    const runStore = createInMemoryRunStore();
    await startedRun(runStore);
    const app = new Hono();
    const hub = createLocalEventHub();
    app.get('/events', (context) => streamRunEvents(context, { runId: 'run_1', runStore, hub, heartbeatMs: 5 }));
    const reader = (await app.request('/events')).body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('event: run.started')) text += (await reader.read()).value ?? '';
    await runStore.forgetConversation(memoryIdOf(scope));
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += chunk.value;
    const frames = text.split('\n\n').filter((frame) => frame !== '' && !frame.startsWith(': heartbeat'));
    expect(frames.map((frame) => /^event: (.*)$/m.exec(frame)?.[1])).toEqual(['run.started', 'error']);
    expect(frames.at(-1)).toContain('"code":"run_not_found"');
  });

  it('ends with an error frame when the run ended but its terminal event could not be stored', async () => {
    const runStore = createInMemoryRunStore();
    await startedRun(runStore);
    await runStore.updateRun('run_1', { status: 'completed', output: 'done' });
    const frames = (await framesOf(runStore, createLocalEventHub(), 5)).filter(
      (frame) => !frame.startsWith(': heartbeat'),
    );
    expect(frames.map((frame) => /^event: (.*)$/m.exec(frame)?.[1])).toEqual(['run.started', 'error']);
    expect(frames.at(-1)).toContain('"code":"run_ended"');
    expect(frames.at(-1)).toContain('ended (completed)');
  });

  it('sends an event published while a pass read the store at once, not a heartbeat later', async () => {
    const base = createInMemoryRunStore();
    await startedRun(base);
    const hub = createLocalEventHub();
    let published = false;
    // Resumed at the current end: the pass reads nothing new, then checks the last event sent;
    // the event is stored and published during that read, when there is no wait to wake yet.
    const runStore: RunStore = Object.create(base, {
      listEvents: {
        value: async (runId: string, afterSeq: number) => {
          const read = await base.listEvents(runId, afterSeq);
          if (!published && afterSeq === -1 && read.length === 1) {
            published = true;
            hub.publish(await base.appendEvent(runId, 'run.completed', {}));
          }
          return read;
        },
      },
    });
    // A heartbeat longer than the test's timeout: the stream ends only if it was woken.
    const frames = await framesOf(runStore, hub, 3_600_000, { 'Last-Event-ID': 'run_1:0' });
    expect(frames.map((frame) => /^event: (.*)$/m.exec(frame)?.[1])).toEqual(['run.completed']);
  });
});
