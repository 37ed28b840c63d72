import type { ParsedObservation } from '../../src/core/observation.js';
import { isNothingToObserve, parseObservations } from '../../src/core/parse-observations.js';
import type { Observer, ObserverInput, Reflector, ReflectorInput } from '../../src/memory/model-observer.js';

/** An observer that answers from a script and records every call. */
export interface ScriptedObserver extends Observer {
  readonly calls: ObserverInput[];
}

/** A reflector that answers from a script and records every call. */
export interface ScriptedReflector extends Reflector {
  readonly calls: ReflectorInput[];
}

type Answer<I, O> = O | Error | ((input: I) => O | Promise<O>);

/**
 * Observer answering with observer-format text (`IMPORTANCE:x` blocks, or `NONE`), one answer per call; the last
 * repeats.
 */
export function scriptedObserver(...answers: Answer<ObserverInput, string>[]): ScriptedObserver {
  const calls: ObserverInput[] = [];
  return {
    calls,
    async observe(input): Promise<ParsedObservation[]> {
      const answer = answers[Math.min(calls.length, answers.length - 1)];
      calls.push(input);
      if (answer instanceof Error) throw answer;
      const text = typeof answer === 'function' ? await answer(input) : (answer ?? '');
      if (isNothingToObserve(text)) return [];
      const parsed = parseObservations(text);
      if (parsed.length === 0) throw new Error('observer returned empty output');
      return parsed;
    },
  };
}

/** Reflector answering with raw reflection text, one answer per call; the last repeats. */
export function scriptedReflector(...answers: Answer<ReflectorInput, string>[]): ScriptedReflector {
  const calls: ReflectorInput[] = [];
  return {
    calls,
    async reflect(input): Promise<string> {
      const answer = answers[Math.min(calls.length, answers.length - 1)];
      calls.push(input);
      if (answer instanceof Error) throw answer;
      return typeof answer === 'function' ? await answer(input) : (answer ?? '');
    },
  };
}

/** Messages with stable ids `m<start>`…, alternating user and assistant. */
export function messages(
  start: number,
  count: number,
  content: (index: number) => string = (index) => `message ${index} ${'x'.repeat(40)}`,
): Array<{ id: string; role: string; content: string }> {
  return Array.from({ length: count }, (_, offset) => {
    const index = start + offset;
    return { id: `m${index}`, role: index % 2 === 0 ? 'user' : 'assistant', content: content(index) };
  });
}
