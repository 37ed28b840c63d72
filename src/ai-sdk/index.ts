/**
 * harness-memory for the Vercel AI SDK (`ai` 6 or 7): `createMemoryMiddleware` for
 * `wrapLanguageModel`, and `createMemoryTools` for `generateText({ tools })`. Loads `ai`, an
 * optional peer dependency; the root entry never does.
 * @module
 */
export { createMemoryMiddleware } from './memory-middleware.js';
export type {
  MemoryMiddleware,
  MemoryMiddlewareOptions,
  MemoryMiddlewarePhase,
  MiddlewareCall,
} from './memory-middleware.js';
export { createMemoryTools } from './memory-tools.js';
export type { MemoryToolsOptions } from './memory-tools.js';
