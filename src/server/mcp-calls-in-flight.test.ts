import { describe, expect, it } from 'vitest';
import { createMcpCallsInFlight, ENDED_KEPT_MS } from './mcp-calls-in-flight.js';

const call = (id: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'memory_observe' } });
const cancelOf = (requestId: unknown) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId } });

describe('McpCallsInFlight', () => {
  it("aborts the one request of the caller that the cancel names, and no other caller's", () => {
    const calls = createMcpCallsInFlight();
    const mine = calls.start('key-a', call(7));
    const theirs = calls.start('key-b', call(7));
    expect(calls.cancel('key-b', cancelOf(8))).toBe(false);
    expect(calls.cancel('key-a', cancelOf(7))).toBe(true);
    expect(mine?.signal.aborted).toBe(true);
    expect(theirs?.signal.aborted).toBe(false);
  });

  it('tells the id 1 from the id "1"', () => {
    const calls = createMcpCallsInFlight();
    const numbered = calls.start('key', call(1));
    const named = calls.start('key', call('1'));
    expect(calls.cancel('key', cancelOf('1'))).toBe(true);
    expect(named?.signal.aborted).toBe(true);
    expect(numbered?.signal.aborted).toBe(false);
  });

  it('stops neither of two requests of one caller under one id (two clients of one key)', () => {
    let clock = 0;
    const calls = createMcpCallsInFlight({ now: () => clock });
    const first = calls.start('key', call(3));
    const second = calls.start('key', call(3));
    expect(calls.cancel('key', cancelOf(3))).toBe(false);
    expect([first?.signal.aborted, second?.signal.aborted]).toEqual([false, false]);
    first?.end();
    // A cancel just after the first ended may be the first client's, late: the second goes on.
    clock += ENDED_KEPT_MS - 1;
    expect(calls.cancel('key', cancelOf(3))).toBe(false);
    expect(second?.signal.aborted).toBe(false);
    clock += 1;
    expect(calls.cancel('key', cancelOf(3))).toBe(true);
    expect(second?.signal.aborted).toBe(true);
  });

  it("never lets a late cancel of an ended request stop another client's new one under its id", () => {
    let clock = 0;
    const calls = createMcpCallsInFlight({ now: () => clock });
    calls.start('key', call(5))?.end();
    clock += 1_000;
    const other = calls.start('key', call(5));
    expect(calls.cancel('key', cancelOf(5))).toBe(false);
    expect(other?.signal.aborted).toBe(false);
  });

  it('forgets an ended request, once, however often it is ended', () => {
    let clock = 0;
    const calls = createMcpCallsInFlight({ now: () => clock });
    const done = calls.start('key', call(1));
    const other = calls.start('key', call(2));
    done?.end();
    done?.end();
    expect(calls.size).toBe(1);
    expect(calls.cancel('key', cancelOf(1))).toBe(false);
    other?.end();
    expect(calls.size).toBe(0);
    // Past the window, an id is free again for a new request of the caller.
    clock += ENDED_KEPT_MS;
    const again = calls.start('key', call(1));
    expect(calls.cancel('key', cancelOf(1))).toBe(true);
    expect(again?.signal.aborted).toBe(true);
  });

  it('registers only requests with an id, and reads only well-formed cancels', () => {
    const calls = createMcpCallsInFlight();
    for (const message of [
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 1, result: {} },
      [call(1)],
      call(null),
      call({ nested: 1 }),
      call(Number.NaN),
      null,
      'text',
    ])
      expect(calls.start('key', message)).toBeUndefined();
    calls.start('key', call(1));
    for (const message of [cancelOf(undefined), cancelOf(null), { method: 'notifications/cancelled' }, [cancelOf(1)]])
      expect(calls.cancel('key', message)).toBe(false);
  });
});
