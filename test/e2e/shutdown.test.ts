import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { MCP_LISTEN_HEADERS, mcpListenBody } from '../support/mcp-listen.js';
import { eventsOf, observeUserLines, startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.close();
  e2e = undefined;
});

async function until(condition: () => boolean): Promise<void> {
  // Polled; the test's timeout bounds the wait.
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

function statusOf(dbPath: string, runId: string): string {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT status FROM harness_runs WHERE run_id = ?').get(runId) as { status: string }).status;
  } finally {
    db.close();
  }
}

describe('e2e: shutting the server down', () => {
  it('cancels a run still going after shutdownTimeoutMs, tells its stream, and stops in bounded time', async () => {
    const started = await startE2E({ shutdownTimeoutMs: 300 });
    e2e = started;
    // The agent's model answers only after 20 s: the run is still going when the server stops.
    started.model.enqueue({ delayMs: 20_000, reply: { text: 'too late' } });
    const runId = await started.startRun({ prompt: 'a long task', conversation_id: 'c-shutdown' });
    const stream = started.events(runId);
    await until(() => started.agentRequests().length === 1);

    const closing = Date.now();
    await started.server.close();
    expect(Date.now() - closing).toBeLessThan(10_000);

    const types = eventsOf(await stream).map((event) => event.type);
    expect(types.at(-1)).toBe('run.cancelled');
    expect(statusOf(started.dbPath, runId)).toBe('cancelled');
  }, 30_000);

  it('lets a run that ends within shutdownTimeoutMs complete', async () => {
    const started = await startE2E({ shutdownTimeoutMs: 10_000 });
    e2e = started;
    started.model.enqueue({ delayMs: 300, reply: { text: 'done in time' } });
    const runId = await started.startRun({ prompt: 'a short task', conversation_id: 'c-shutdown-2' });
    const stream = started.events(runId);
    await until(() => started.agentRequests().length === 1);
    await started.server.close();
    expect(eventsOf(await stream).map((event) => event.type)).toContain('run.completed');
    expect(statusOf(started.dbPath, runId)).toBe('completed');
  }, 30_000);

  it("does not wait for a cancelled run's memory work past the deadline", async () => {
    const started = await startE2E({ shutdownTimeoutMs: 300 });
    e2e = started;
    // Step 0 calls a tool; its observation takes 8 s, beside step 1, whose answer takes 20 s.
    started.script.agent = (turn) =>
      turn.step === 0
        ? { text: 'noting', toolCalls: [{ id: 'c1', name: 'working_memory', arguments: { action: 'list' } }] }
        : { delayMs: 20_000, reply: { text: 'too late' } };
    started.script.observer = (request) => ({ delayMs: 8_000, reply: observeUserLines(request) });
    const runId = await started.startRun({ prompt: 'a long task', conversation_id: 'c-shutdown-3' });
    const stream = started.events(runId);
    await until(() => started.agentRequests().length === 2);

    const closing = Date.now();
    await started.server.close();
    expect(Date.now() - closing).toBeLessThan(4_000);
    expect(eventsOf(await stream).at(-1)?.type).toBe('run.cancelled');
  }, 30_000);

  it("does not wait past the deadline for the background worker's model call", async () => {
    const started = await startE2E({ shutdownTimeoutMs: 500 });
    e2e = started;
    // The run's observation fails once (503); the worker's retry then takes 20 s.
    let observerCalls = 0;
    started.script.observer = (request) =>
      ++observerCalls === 1
        ? { status: 503, body: { error: { message: 'down' } } }
        : { delayMs: 20_000, reply: observeUserLines(request) };
    const runId = await started.startRun({ prompt: 'remember tabs', conversation_id: 'c-shutdown-worker' });
    await eventsOf(await started.events(runId));
    await until(() => observerCalls === 2);

    const closing = Date.now();
    await started.server.close();
    expect(Date.now() - closing).toBeLessThan(10_000);
  }, 30_000);

  it('does not wait for an idle event stream that has no run behind it', async () => {
    const started = await startE2E({ shutdownTimeoutMs: 5_000 });
    e2e = started;
    const listening = await started.api('/mcp', {
      method: 'POST',
      headers: MCP_LISTEN_HEADERS,
      body: mcpListenBody(1),
    });
    expect(listening.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const closing = Date.now();
    await started.server.close();
    expect(Date.now() - closing).toBeLessThan(2_000);
    await listening.body?.cancel().catch(() => undefined);
  }, 30_000);
});
