/**
 * Catalogue case B12: 50 runs at once through the real harness over HTTP (SQLite, the real
 * OpenAI-compatible client, the scripted model server). On one scope, the runs go on side by
 * side while their memory work is serialized: every run completes, each prompt is observed
 * exactly once, observations apply in message order, the observer is never called twice at
 * once for the scope, and the conversation history holds every run's messages once, each
 * run's in order. On 50 distinct scopes (sharing tenant, conversation or agent ids, never all
 * three), each scope's memory, working memory, history and observer input hold only its own
 * canary.
 *
 * The server's per-tenant limits are raised for this, since 50 runs of one tenant exceed
 * the defaults: 16 runs at once (`HARNESS_MAX_CONCURRENT_RUNS`), 32 event streams
 * (`HARNESS_MAX_SSE_CONNECTIONS`) and 50 writes a second (`HARNESS_MAX_WRITES_PER_SECOND`).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import type { ConversationMessage } from '../../src/storage/run-store.js';
import type { ScriptedReply, ScriptedRequest } from '../support/scripted-openai-server.js';
import { agentTurnOf, eventsOf, messagesOf, startE2E, typesOf } from './e2e-harness.js';
import type { ChatMessage, E2E } from './e2e-harness.js';

const RUNS = 50;
const LIMITS_ENV: Readonly<Record<string, string>> = {
  // Counted per tenant (there are no API keys): 50 runs and their 50 streams at once, with
  // room for a later run's while the ended ones are being released.
  HARNESS_MAX_CONCURRENT_RUNS: '64',
  HARNESS_MAX_SSE_CONNECTIONS: '64',
  HARNESS_MAX_WRITES_PER_SECOND: '200',
  HARNESS_MAX_READS_PER_SECOND: '2000',
  // Every observation fits the snippet, and no reflection folds them together.
  HARNESS_MEMORY_SNIPPET_MAX_TOKENS: '8000',
  HARNESS_MEMORY_REFLECT_THRESHOLD_TOKENS: '100000',
};

/** The tenant, conversation and agent of a scope, as the HTTP API names them. */
interface ScopeIds {
  readonly tenant_id: string;
  readonly conversation_id: string;
  readonly agent_id: string;
}

const two = (index: number): string => String(index).padStart(2, '0');
const promptOf = (canary: string): string => `Please keep ${canary} for me.`;
const CANARY = /\b(?:SAME|SCOPE)-\d{2}\b/g;

/** The canaries a text names, in order. */
function canariesIn(text: string): string[] {
  return text.match(CANARY) ?? [];
}

/**
 * Holds each run's first model turn until all `size` runs have reached it, so all of them
 * are under way at once. Opens anyway after `timeoutMs`, so a run that never comes fails the
 * test's assertion instead of hanging it.
 */
function createGate(size: number, timeoutMs: number) {
  let arrived = 0;
  let arrivedWhenOpened = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = () => {
      arrivedWhenOpened = arrived;
      resolve();
    };
  });
  const timer = setTimeout(open, timeoutMs);
  return {
    async pass(): Promise<void> {
      arrived++;
      if (arrived === size) {
        clearTimeout(timer);
        open();
      }
      await opened;
    },
    /** How many runs were waiting at the gate when it opened. */
    get arrivedWhenOpened(): number {
      return arrivedWhenOpened;
    },
    dispose(): void {
      clearTimeout(timer);
    },
  };
}

/** A message of an observer request's `<transcript>`. */
interface TranscriptEntry {
  readonly seq: number;
  readonly role: string;
  readonly text: string;
}

function userPromptOf(request: ScriptedRequest): string {
  return String(messagesOf(request)[1]?.content ?? '');
}

function transcriptOf(request: ScriptedRequest): TranscriptEntry[] {
  const user = userPromptOf(request);
  const fenced = user.slice(
    user.indexOf('<transcript>\n') + '<transcript>\n'.length,
    user.lastIndexOf('</transcript>'),
  );
  const entries: TranscriptEntry[] = [];
  for (const line of fenced.split('\n')) {
    const head = /^\[(\d+)\] ([a-z_-]+)(?: \([^)]*\))?: (.*)$/.exec(line);
    if (head) entries.push({ seq: Number(head[1]), role: head[2] ?? '', text: head[3] ?? '' });
  }
  return entries;
}

/** The scope an observer request is for, from its `Scope:` block, as `tenant/conversation/agent`. */
function observedScopeOf(request: ScriptedRequest): string {
  const text = userPromptOf(request);
  const id = (name: string): string => new RegExp(`^- ${name}: (.*)$`, 'm').exec(text)?.[1] ?? '?';
  return `${id('tenant_id')}/${id('conversation_id')}/${id('agent_id')}`;
}

const keyOf = (scope: ScopeIds): string => `${scope.tenant_id}/${scope.conversation_id}/${scope.agent_id}`;

/** One observer call: its scope, its transcript, and when it was answered relative to the others. */
interface ObserverCall {
  readonly scope: string;
  readonly transcript: readonly TranscriptEntry[];
  /** Canaries anywhere in its prompt: the transcript and the memory it is shown. */
  readonly canaries: readonly string[];
  /** Observer calls of the same scope in flight when this one began (itself included). */
  readonly inFlight: number;
}

let e2e: E2E;
let gate: ReturnType<typeof createGate>;
let observerCalls: ObserverCall[];

beforeEach(async () => {
  // Heartbeats only matter to idle streams; these never idle for long.
  e2e = await startE2E({ env: LIMITS_ENV, heartbeatMs: 10_000 });
  gate = createGate(RUNS, 20_000);
  observerCalls = [];
  const inFlight = new Map<string, number>();
  // The observer quotes each user line naming a canary, citing it; it takes a few
  // milliseconds, as a model does, so calls of one scope would overlap if they were not serialized.
  e2e.script.observer = (request) => async (): Promise<ScriptedReply> => {
    const scope = observedScopeOf(request);
    const now = (inFlight.get(scope) ?? 0) + 1;
    inFlight.set(scope, now);
    const transcript = transcriptOf(request);
    observerCalls.push({ scope, transcript, canaries: canariesIn(userPromptOf(request)), inFlight: now });
    await new Promise((resolve) => setTimeout(resolve, 5));
    inFlight.set(scope, (inFlight.get(scope) ?? 1) - 1);
    const blocks = transcript
      .filter((entry) => entry.role === 'user' && canariesIn(entry.text).length > 0)
      .map((entry) => `IMPORTANCE:0.9\nSOURCE: ${entry.seq}\nThe user said: ${entry.text}`);
    return { text: blocks.length > 0 ? blocks.join('\n\n') : 'NONE' };
  };
  // A run on the shared scope answers at once; a run on its own scope first sets the
  // working-memory key every scope uses, then answers. Each run's first turn waits at the gate.
  e2e.script.agent = (turn) => {
    const [canary] = canariesIn(turn.prompt);
    if (canary === undefined) return { text: 'All kept.' };
    if (turn.step > 0) return { text: `done ${canary}` };
    const reply: ScriptedReply = canary.startsWith('SAME')
      ? { text: `done ${canary}` }
      : {
          toolCalls: [
            {
              id: `call_${canary}`,
              name: 'working_memory',
              arguments: { action: 'set', key: 'canary', value: canary },
            },
          ],
        };
    return async () => {
      await gate.pass();
      return reply;
    };
  };
});
afterEach(async () => {
  gate.dispose();
  await e2e.close();
});

/** Starts one run per scope at once and reads each one's event stream to its end. */
async function runAll(scopes: readonly ScopeIds[], canaries: readonly string[]) {
  const runIds = await Promise.all(
    scopes.map((scope, index) => e2e.startRun({ prompt: promptOf(canaries[index] as string), ...scope })),
  );
  const frames = await Promise.all(runIds.map((runId) => e2e.events(runId)));
  return runIds.map((runId, index) => ({
    runId,
    events: eventsOf(frames[index] ?? []),
    types: typesOf(frames[index] ?? []),
  }));
}

/** Each run completed, with one terminal event, its answer and `steps` steps. */
async function expectAllCompleted(
  runs: Awaited<ReturnType<typeof runAll>>,
  canaries: readonly string[],
  steps: number,
): Promise<void> {
  const records = await Promise.all(runs.map((run) => e2e.apiJson(`/v1/runs/${run.runId}`)));
  for (const [index, run] of runs.entries()) {
    expect(run.types.at(-1), run.runId).toBe('run.completed');
    expect(
      run.types.filter((type) => type.startsWith('run.') && type !== 'run.started' && type !== 'run.step.completed'),
    ).toEqual(['run.completed']);
    expect(records[index]?.body).toMatchObject({ status: 'completed', output: `done ${canaries[index]}`, steps });
  }
  // All of them were under way at once: each first turn waited for the last run's.
  expect(gate.arrivedWhenOpened).toBe(runs.length);
}

const memoryPath = (scope: ScopeIds): string =>
  `/v1/memory/${scope.tenant_id}/${scope.conversation_id}/${scope.agent_id}`;

/** Every item of a paged list route. */
async function allPages(path: string): Promise<Array<Record<string, any>>> {
  const items: Array<Record<string, any>> = [];
  let cursor: string | null = null;
  do {
    const query = `${path.includes('?') ? '&' : '?'}limit=200${cursor === null ? '' : `&cursor=${cursor}`}`;
    const page = await e2e.apiJson(`${path}${query}`);
    expect(page.status).toBe(200);
    items.push(...(page.body['items'] as Array<Record<string, any>>));
    cursor = page.body['next_cursor'] as string | null;
  } while (cursor !== null);
  return items;
}

/**
 * Waits until the scope's memory work is done: nothing left unobserved and every operation
 * settled. A run may end before memory has taken all of it (callers beyond the scope's queue
 * leave their operation queued for the last caller or the worker).
 */
async function memoryOfWhenSettled(scope: ScopeIds): Promise<Record<string, any>> {
  let detail: Record<string, any> = {};
  await vi.waitFor(
    async () => {
      const memory = await e2e.apiJson(memoryPath(scope));
      expect(memory.status).toBe(200);
      expect(memory.body['progress']).toMatchObject({ unobserved_tokens: 0, observing: false });
      const open = (await allPages(`${memoryPath(scope)}/operations`)).filter(
        (operation) => operation['status'] !== 'applied',
      );
      expect(open).toEqual([]);
      detail = memory.body;
    },
    { timeout: 20_000, interval: 50 },
  );
  return detail;
}

/** The conversation's stored history, oldest first. */
async function storedHistory(scope: ScopeIds): Promise<ConversationMessage[]> {
  const memoryId = memoryIdOf(
    resolveScope({ tenantId: scope.tenant_id, conversationId: scope.conversation_id, agentId: scope.agent_id }),
  );
  return e2e.harness.runStore.recentMessages(memoryId, Number.MAX_SAFE_INTEGER);
}

/**
 * A run's messages, in its order: the prompt, then the answer; with `toolCall`, the
 * working-memory call and its result between them.
 */
function expectRunMessages(
  messages: readonly ConversationMessage[],
  runId: string,
  canary: string,
  toolCall: boolean,
): void {
  const answer = { id: `${runId}:assistant:${toolCall ? 2 : 1}`, role: 'assistant', content: `done ${canary}` };
  expect(
    messages.map((message) => ({ id: message.messageId, role: message.role, content: message.content })),
    runId,
  ).toEqual([
    { id: `${runId}:user`, role: 'user', content: promptOf(canary) },
    ...(toolCall
      ? [
          { id: `${runId}:assistant:1`, role: 'assistant', content: '' },
          { id: `${runId}:tool:1:call_${canary}`, role: 'tool', content: expect.any(String) },
        ]
      : []),
    answer,
  ]);
  if (toolCall) expect(messages[1]?.toolCalls?.map((call) => call.name)).toEqual(['working_memory']);
}

describe('e2e: 50 parallel runs (B12)', () => {
  it('serializes the memory work of 50 parallel runs on one scope: nothing lost, doubled or out of order', async () => {
    const scope: ScopeIds = { tenant_id: 'acme', conversation_id: 'b12-shared', agent_id: 'agent-1' };
    const canaries = Array.from({ length: RUNS }, (_, index) => `SAME-${two(index)}`);
    const runs = await runAll(
      canaries.map(() => scope),
      canaries,
    );
    await expectAllCompleted(runs, canaries, 1);
    await memoryOfWhenSettled(scope);

    // The scope's observer calls never overlapped, and each prompt went to the observer once.
    expect(observerCalls.length).toBeGreaterThan(0);
    expect(observerCalls.every((call) => call.scope === keyOf(scope) && call.inFlight === 1)).toBe(true);
    const observedPrompts = observerCalls.flatMap((call) =>
      call.transcript.filter((entry) => entry.role === 'user').map((entry) => entry.text),
    );
    expect(observedPrompts.toSorted()).toEqual(canaries.map(promptOf).toSorted());

    // One observation per prompt, none lost or doubled, applied in message order.
    // The listing is newest first.
    const observations = (await allPages(`${memoryPath(scope)}/observations`)).toSorted((a, b) => a['seq'] - b['seq']);
    expect(observations.map((observation) => observation['content']).toSorted()).toEqual(
      canaries.map((canary) => `The user said: ${promptOf(canary)}`).toSorted(),
    );
    expect(observations.map((observation) => observation['seq'])).toEqual(
      Array.from({ length: RUNS }, (_, index) => index + 1),
    );
    const cited = observations.map((observation) => observation['source_message_indexes'] as number[]);
    expect(cited.every((indexes) => indexes.length === 1)).toBe(true);
    const citedOrder = cited.map((indexes) => indexes[0] as number);
    expect(citedOrder).toEqual(citedOrder.toSorted((a, b) => a - b));
    expect(new Set(citedOrder).size).toBe(RUNS);
    expect(observations.every((observation) => observation['source'] === 'user')).toBe(true);
    // Every operation applied, in the scope's sequence.
    const operations = (await allPages(`${memoryPath(scope)}/operations`)).toSorted(
      (a, b) => a['scope_sequence'] - b['scope_sequence'],
    );
    expect(operations.map((operation) => operation['status'])).toEqual(operations.map(() => 'applied'));
    expect(new Set(operations.map((operation) => operation['scope_sequence'])).size).toBe(operations.length);

    // The history holds each run's two messages once, each run's in its order.
    const history = await storedHistory(scope);
    expect(history).toHaveLength(RUNS * 2);
    expect(new Set(history.map((message) => message.messageId)).size).toBe(history.length);
    for (const [index, run] of runs.entries())
      expectRunMessages(
        history.filter((message) => message.runId === run.runId),
        run.runId,
        canaries[index] as string,
        false,
      );

    // The next run's turn replays that history whole, in the stored order, and its memory
    // snippet names each prompt once.
    expect(history.reduce((sum, message) => sum + message.tokenCount, 0)).toBeLessThan(8_000);
    const next = await e2e.startRun({ prompt: 'What did I ask you to keep?', ...scope });
    expect(typesOf(await e2e.events(next)).at(-1)).toBe('run.completed');
    const request = e2e.agentRequests().find((item) => agentTurnOf(item).prompt === 'What did I ask you to keep?');
    const messages = messagesOf(request!);
    const replayed = messages.filter((message) => message.role !== 'system').slice(0, -1);
    expect(replayed.map((message: ChatMessage) => [message.role, message.content ?? ''])).toEqual(
      history.map((message) => [message.role, message.content]),
    );
    const snippet = String(messages.find((message) => message.content?.startsWith('<observational-memory>'))?.content);
    for (const canary of canaries) expect(snippet.split(`The user said: ${promptOf(canary)}`), canary).toHaveLength(2);
  });

  it('keeps 50 runs on 50 distinct scopes apart: each scope holds only its own canary', async () => {
    // Every scope shares its tenant, its conversation or its agent id with others; no two share all three.
    const scopes: ScopeIds[] = Array.from({ length: RUNS }, (_, index) => ({
      tenant_id: `t${index % 5}`,
      conversation_id: `c${Math.floor(index / 5) % 5}`,
      agent_id: `a${Math.floor(index / 25)}`,
    }));
    expect(new Set(scopes.map(keyOf)).size).toBe(RUNS);
    const canaries = Array.from({ length: RUNS }, (_, index) => `SCOPE-${two(index)}`);
    const runs = await runAll(scopes, canaries);
    await expectAllCompleted(runs, canaries, 2);

    // Read side by side: under load, 150 reads one after the other take longer than the runs.
    const [memories, histories] = await Promise.all([
      Promise.all(scopes.map(memoryOfWhenSettled)),
      Promise.all(scopes.map(storedHistory)),
    ]);
    for (const [index, scope] of scopes.entries()) {
      const canary = canaries[index] as string;
      const own = [canary];
      // Its run's stream names only its canary.
      expect(new Set(canariesIn(JSON.stringify(runs[index]?.events))), canary).toEqual(new Set(own));
      const memory = memories[index] as Record<string, any>;
      expect(memory['observations'].map((observation: Record<string, unknown>) => observation['content'])).toEqual([
        `The user said: ${promptOf(canary)}`,
      ]);
      expect(memory['working_memory']).toEqual([expect.objectContaining({ key: 'canary', value: canary })]);
      expect(new Set(canariesIn(JSON.stringify(memory))), canary).toEqual(new Set(own));
      // Its history is its run's four messages.
      const history = histories[index] as ConversationMessage[];
      expectRunMessages(history, runs[index]?.runId as string, canary, true);
      expect(new Set(canariesIn(JSON.stringify(history))), canary).toEqual(new Set(own));
      // The memory model was shown only this scope's messages for it, one call at a time.
      const calls = observerCalls.filter((call) => call.scope === keyOf(scope));
      expect(calls.length, canary).toBeGreaterThan(0);
      expect(calls.every((call) => call.inFlight === 1)).toBe(true);
      expect(new Set(calls.flatMap((call) => call.canaries)), canary).toEqual(new Set(own));
    }
    // Every model turn of a run was shown only that run's canary: prompt, history and both snippets.
    const turns = e2e.agentRequests().map(agentTurnOf);
    expect(turns).toHaveLength(RUNS * 2);
    for (const turn of turns)
      expect(new Set(canariesIn(JSON.stringify(messagesOf(turn.request)))), turn.prompt).toEqual(
        new Set(canariesIn(turn.prompt)),
      );
    // Each tenant's run listing holds exactly its own ten runs.
    const tenants = [0, 1, 2, 3, 4];
    const listings = await Promise.all(tenants.map((tenant) => allPages(`/v1/runs?tenant_id=t${tenant}`)));
    for (const tenant of tenants) {
      const expected = runs.filter((_, index) => index % 5 === tenant).map((run) => run.runId);
      expect(listings[tenant]?.map((run) => run['run_id']).toSorted(), `t${tenant}`).toEqual(expected.toSorted());
    }
  });
});
