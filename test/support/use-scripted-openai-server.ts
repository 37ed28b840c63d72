/**
 * One scripted OpenAI-compatible server for the calling suite: started before its tests,
 * closed after them, and before each test its record emptied and its default reply set.
 */
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { startScriptedOpenAIServer } from './scripted-openai-server.js';
import type { ScriptedReply, ScriptedServer } from './scripted-openai-server.js';

/** Registers the hooks in the calling suite; the server it returns is usable inside its tests. */
export function useScriptedOpenAIServer(defaultReply: ScriptedReply = { text: 'ok' }): ScriptedServer {
  let started: ScriptedServer | undefined;
  const current = (): ScriptedServer => {
    if (!started) throw new Error('the scripted server is used before its suite started it (in beforeAll)');
    return started;
  };
  beforeAll(async () => {
    started = await startScriptedOpenAIServer();
  });
  afterAll(async () => {
    await started?.close();
  });
  beforeEach(() => {
    current().requests.length = 0;
    current().setDefaultReply(defaultReply);
  });
  return {
    get url() {
      return current().url;
    },
    get origin() {
      return current().origin;
    },
    get requests() {
      return current().requests;
    },
    enqueue: (...replies) => current().enqueue(...replies),
    setDefaultReply: (reply) => current().setDefaultReply(reply),
    close: () => current().close(),
  };
}
