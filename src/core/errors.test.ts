import { describe, expect, it } from 'vitest';
import { ConfigError, HarnessMemoryError, ModelCallError, StoreError, ToolError } from './errors.js';

describe('errors: isInstance', () => {
  const store = new StoreError({ store: 'sqlite', message: 'disk full' });
  const model = new ModelCallError({ message: 'HTTP 503', statusCode: 503 });
  const config = new ConfigError({ key: 'memory.mode', source: 'env', message: 'bad' });
  const tool = new ToolError({ toolName: 'working_memory', message: 'bad' });

  it('is true on the base class for every harness-memory error, and for nothing else', () => {
    for (const error of [store, model, config, tool]) expect(HarnessMemoryError.isInstance(error)).toBe(true);
    for (const other of [new Error('x'), { code: 'STORE_FAILED' }, null, 'text'])
      expect(HarnessMemoryError.isInstance(other)).toBe(false);
  });

  it('is true on a subclass only for errors of that subclass', () => {
    expect(ModelCallError.isInstance(model)).toBe(true);
    expect(ModelCallError.isInstance(store)).toBe(false);
    expect(ConfigError.isInstance(store)).toBe(false);
    expect(ConfigError.isInstance(config)).toBe(true);
    expect(StoreError.isInstance(store)).toBe(true);
    expect(StoreError.isInstance(tool)).toBe(false);
    expect(ToolError.isInstance(tool)).toBe(true);
    expect(ToolError.isInstance(new HarnessMemoryError({ code: 'STORE_FAILED', component: 'x', message: 'y' }))).toBe(
      false,
    );
  });

  it('narrows to the subclass, so its own members are usable', () => {
    const caught: unknown = model;
    // Type-checked by npm run test:types: isRetryable exists on ModelCallError only.
    expect(ModelCallError.isInstance(caught) && caught.isRetryable).toBe(true);
    const config2: unknown = config;
    expect(ConfigError.isInstance(config2) ? config2.key : undefined).toBe('memory.mode');
  });

  it('recognises an error made by another copy of the package, by its marker', () => {
    const foreign = Object.defineProperty(new Error('from another copy'), Symbol.for('harness-memory.error'), {
      value: ['HarnessMemoryError', 'StoreError'],
    });
    expect(StoreError.isInstance(foreign)).toBe(true);
    expect(ModelCallError.isInstance(foreign)).toBe(false);
  });

  it('answers as the base class when called detached, and reads the marker of an older copy', () => {
    expect([store, new Error('x')].filter(HarnessMemoryError.isInstance)).toEqual([store]);
    // TypeScript asks for the class as `this`; plain JavaScript may still call it detached.
    const detached = StoreError.isInstance as (error: unknown) => boolean;
    expect(detached(model)).toBe(true);
    const older = Object.defineProperty(new Error('old'), Symbol.for('harness-memory.error'), { value: true });
    expect(HarnessMemoryError.isInstance(older)).toBe(true);
    expect(StoreError.isInstance(older)).toBe(false);
  });
});
