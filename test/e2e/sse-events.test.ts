import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsOf, startE2E, typesOf } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';
import { createSseParser, eventData, openSse } from './sse-client.js';
import type { SseFrame } from './sse-client.js';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ heartbeatMs: 100 });
  // Prompts starting with "tools:" make the agent call a tool for two steps, then answer;
  // prompts starting with "slow:" make each agent turn take 400 ms.
  e2e.script.agent = (turn) => {
    const answer =
      turn.prompt.includes('tools:') && turn.step < 2
        ? {
            text: `step ${turn.step}`,
            toolCalls: [
              {
                id: `call_${turn.step}`,
                name: 'working_memory',
                arguments: { action: 'set', key: `k${turn.step}`, value: turn.step },
              },
            ],
          }
        : { text: `final for ${turn.prompt}` };
    return turn.prompt.startsWith('slow:') ? { delayMs: 400, reply: answer } : answer;
  };
});
afterAll(async () => {
  await e2e.close();
});

const eventsUrl = (runId: string) => `${e2e.url}/v1/runs/${runId}/events`;

/** Every frame has id `<run_id>:<seq>` with seq 0.. contiguous, retry 3000, and the reference's data keys. */
function expectWellFormed(frames: readonly SseFrame[], runId: string, firstSeq = 0): void {
  frames.forEach((frame, index) => {
    const seq = firstSeq + index;
    expect(frame.id).toBe(`${runId}:${seq}`);
    expect(frame.retry).toBe(3000);
    const data = eventData(frame);
    expect(Object.keys(data)).toEqual(['id', 'run_id', 'type', 'timestamp', 'payload']);
    expect(data.id).toBe(frame.id);
    expect(data.run_id).toBe(runId);
    expect(data.type).toBe(frame.event);
    expect(Number.isNaN(Date.parse(data.timestamp))).toBe(false);
    expect(typeof data.payload).toBe('object');
  });
}

describe('e2e: SSE client parser', () => {
  it('parses fields split across chunks, CRLF line ends, comments and multi-line data', () => {
    const parser = createSseParser();
    const frames = [
      ...parser.push(': heartbeat\r\n\r\nid: r:0\r\nretry: 3000\r'),
      ...parser.push('\nevent: a\ndata: {"x":'),
      ...parser.push('1}\ndata:second\n\nid: r:1\ndata: x\n'),
      ...parser.push('\n'),
    ];
    expect(parser.comments).toBe(1);
    expect(frames.map(({ id, retry, event, data }) => ({ id, retry, event, data }))).toEqual([
      { id: 'r:0', retry: 3000, event: 'a', data: '{"x":1}\nsecond' },
      { id: 'r:1', retry: undefined, event: undefined, data: 'x' },
    ]);
  });
});

describe('e2e: SSE over HTTP', () => {
  it('orders events within each step as the reference does, and closes after run.completed', async () => {
    const runId = await e2e.startRun({ prompt: 'tools: do three steps', conversation_id: 'sse-order' });
    const stream = await openSse(eventsUrl(runId));
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers.get('cache-control')).toBe('no-cache');
    const frames = await stream.collect({ timeoutMs: 15_000 });
    // collect() returned without `until`: the server ended the stream.
    expect(stream.ended).toBe(true);
    expectWellFormed(frames, runId);

    const events = eventsOf(frames);
    const types = typesOf(frames);
    expect(types[0]).toBe('run.started');
    expect(types.at(-1)).toBe('run.completed');
    expect(types.filter((type) => type === 'run.completed')).toHaveLength(1);
    const completedAt = types.indexOf('run.completed');
    for (const step of [1, 2, 3]) {
      const at = (type: string) => events.findIndex((event) => event.type === type && event.payload['step'] === step);
      const assistant = at('assistant.message');
      const started = at('memory.observe.started');
      const observed = at('memory.observe.completed');
      const stepDone = at('run.step.completed');
      expect(assistant, `step ${step}`).toBeGreaterThanOrEqual(0);
      expect(started, `step ${step}`).toBeGreaterThan(assistant);
      expect(observed, `step ${step}`).toBeGreaterThan(started);
      expect(stepDone, `step ${step}`).toBeGreaterThan(assistant);
      expect(stepDone, `step ${step}`).toBeLessThan(completedAt);
      expect(events[assistant]?.payload['final']).toBe(step === 3);
      if (step < 3) {
        const toolStarted = at('tool.call.started');
        const toolDone = at('tool.call.completed');
        expect(toolStarted).toBeGreaterThan(assistant);
        expect(toolDone).toBeGreaterThan(toolStarted);
        expect(stepDone).toBeGreaterThan(toolDone);
      }
    }
    expect(events.at(-1)?.payload).toMatchObject({ output: 'final for tools: do three steps', steps: 3 });
    expect(
      events.every(
        (event) => event.payload['schema_version'] === '1' && event.payload['conversation_id'] === 'sse-order',
      ),
    ).toBe(true);
  });

  it('resumes with Last-Event-ID, replaying exactly the events after it', async () => {
    const runId = await e2e.startRun({ prompt: 'tools: resume me', conversation_id: 'sse-resume' });
    const all = await e2e.events(runId);
    expect(all.length).toBeGreaterThan(8);
    for (const n of [0, 3, all.length - 2]) {
      const resumed = await e2e.events(runId, { lastEventId: `${runId}:${n}` });
      expect(
        resumed.map((frame) => frame.id),
        `after ${n}`,
      ).toEqual(all.slice(n + 1).map((frame) => frame.id));
      expect(resumed.map((frame) => frame.data)).toEqual(all.slice(n + 1).map((frame) => frame.data));
      expectWellFormed(resumed, runId, n + 1);
    }
  });

  // A browser EventSource reconnects after every close with Last-Event-ID = the
  // run.completed id; 204 is what makes it stop (an empty 200 brought it back every 3 s).
  it('answers 204 to a resume whose Last-Event-ID is the terminal event', async () => {
    const runId = await e2e.startRun({ prompt: 'resume after the end', conversation_id: 'sse-resume-end' });
    const all = await e2e.events(runId);
    const stream = await openSse(eventsUrl(runId), { lastEventId: all.at(-1)!.id! });
    try {
      expect(stream.status).toBe(204);
      expect(await stream.collect({ timeoutMs: 1_000 })).toEqual([]);
    } finally {
      stream.close();
    }
    const before = await openSse(eventsUrl(runId), { lastEventId: all.at(-2)!.id! });
    try {
      expect(before.status).toBe(200);
      expect((await before.collect({ timeoutMs: 5_000 })).map((frame) => frame.event)).toEqual(['run.completed']);
    } finally {
      before.close();
    }
  });

  it('gives a subscriber that connects after the run ended the full history', async () => {
    const runId = await e2e.startRun({ prompt: 'tools: late subscriber', conversation_id: 'sse-late' });
    const live = await e2e.events(runId);
    const late = await e2e.events(runId);
    expect(late.map((frame) => frame.data)).toEqual(live.map((frame) => frame.data));
    expectWellFormed(late, runId);
    expect(typesOf(late).at(-1)).toBe('run.completed');
  });

  it('streams live events to subscribers connecting before and while the run runs', async () => {
    const runId = await e2e.startRun({ prompt: 'slow: tools: live please', conversation_id: 'sse-live' });
    const early = await openSse(eventsUrl(runId));
    const first = await early.collect({ until: () => true, timeoutMs: 5_000 });
    expect(first.map((frame) => frame.event)).toEqual(['run.started']);
    // The first frame came while the run was still going: the model takes 400 ms a turn.
    expect((await e2e.apiJson(`/v1/runs/${runId}`)).body['status']).toBe('running');

    // Join mid-run, once the first step's answer is out.
    const upToFirstAnswer = await early.collect({
      until: (frame) => frame.event === 'assistant.message',
      timeoutMs: 5_000,
    });
    const midway = await openSse(eventsUrl(runId));
    const midwayFirst = await midway.collect({ until: () => true, timeoutMs: 5_000 });
    expect(midwayFirst[0]?.id).toBe(`${runId}:0`);
    const joinedAt = Date.now();

    const [restEarly, restMidway] = await Promise.all([
      early.collect({ timeoutMs: 10_000 }),
      midway.collect({ timeoutMs: 10_000 }),
    ]);
    const earlyAll = [...first, ...upToFirstAnswer, ...restEarly];
    const midwayAll = [...midwayFirst, ...restMidway];
    expectWellFormed(earlyAll, runId);
    expectWellFormed(midwayAll, runId);
    expect(midwayAll.map((frame) => frame.data)).toEqual(earlyAll.map((frame) => frame.data));
    expect(typesOf(earlyAll).at(-1)).toBe('run.completed');
    // The later steps' events arrived live, spread over the run, not in one burst at the end.
    const completed = midwayAll.at(-1)!;
    expect(completed.receivedAt - joinedAt).toBeGreaterThanOrEqual(300);
    expect(completed.receivedAt - first[0]!.receivedAt).toBeGreaterThanOrEqual(900);
  });

  it('sends heartbeat comments while the run is idle', async () => {
    const runId = await e2e.startRun({ prompt: 'slow: heartbeat', conversation_id: 'sse-heartbeat' });
    const stream = await openSse(eventsUrl(runId));
    const frames = await stream.collect({ timeoutMs: 10_000 });
    expect(typesOf(frames).at(-1)).toBe('run.completed');
    // 400 ms of model time with a 100 ms heartbeat interval.
    expect(stream.comments).toBeGreaterThanOrEqual(2);
  });

  it('answers 404 JSON for the events of an unknown run', async () => {
    const stream = await openSse(eventsUrl('run_does_not_exist'));
    expect(stream.status).toBe(404);
    expect(JSON.parse(stream.errorText)).toEqual({
      error: { code: 'not_found', message: expect.stringContaining('run_does_not_exist') },
    });
  });
});
