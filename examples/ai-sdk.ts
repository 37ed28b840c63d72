/**
 * harness-memory with the Vercel AI SDK, end to end, against the scripted OpenAI-compatible
 * server of the tests (no hosted model is called). Run with `npm run example:ai-sdk`.
 * The part between the markers is the README's quickstart.
 */
import { startScriptedOpenAIServer } from '../test/support/scripted-openai-server.js';

const server = await startScriptedOpenAIServer();
server.setDefaultReply((request) => {
  const body = request.body as { messages: { role: string; content: string }[] };
  // The memory model observes; the chat model answers from the memory it is shown.
  if (JSON.stringify(body).includes('IMPORTANCE')) return { text: 'IMPORTANCE: 0.9\nThe user is allergic to peanuts.' };
  const remembered = body.messages.some((message) => message.role === 'system' && message.content.includes('peanuts'));
  return { text: remembered ? 'You told me you are allergic to peanuts.' : 'Noted.' };
});
const baseURL = server.url;

// quickstart:start
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, wrapLanguageModel } from 'ai';
import { createObservationalMemory, createWorkingMemory } from 'harness-memory';
import { createOpenAICompatibleModel } from 'harness-memory/llm';
import { createMemoryMiddleware, createMemoryTools } from 'harness-memory/ai-sdk';
import { createSqliteStore } from 'harness-memory/storage/sqlite';

const store = createSqliteStore({ path: '.harness/example-ai-sdk.db' });
const observer = createOpenAICompatibleModel({ baseURL, apiKey: 'local', modelId: 'memory-model' });
const memory = createObservationalMemory({
  store,
  model: observer,
  defaultEnabled: true,
  defaults: { observeMinTokens: 1 },
});
const workingMemory = createWorkingMemory({ store });
const scope = { tenantId: 'acme', conversationId: `chat-${Date.now()}`, agentId: 'assistant' };

const middleware = createMemoryMiddleware({ memory, workingMemory, scope });
const model = wrapLanguageModel({
  model: createOpenAICompatible({ name: 'local', baseURL }).chatModel('chat-model'),
  middleware,
});
const tools = createMemoryTools({ memory, workingMemory, scope });

await generateText({ model, tools, prompt: 'I am allergic to peanuts.' });
await middleware.flush(); // in a server, observation runs in the background; here we wait for it
const { text } = await generateText({ model, tools, prompt: 'What should I avoid eating?' });
console.log(text);
// quickstart:end

await middleware.flush();
await memory.drain();
await store.dispose();
await server.close();
