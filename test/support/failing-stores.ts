/**
 * Fault injection for tests: wraps a store (any object of async methods) so that chosen
 * methods reject with a `STORE_FAILED` error, on chosen calls, until cleared.
 * @module
 */
import { StoreError } from '../../src/core/errors.js';

/** Which calls fail: a method, an optional test of its arguments, and how many times. */
export interface InjectedFault {
  readonly method: string;
  readonly when?: (...args: any[]) => boolean;
  /** @default every matching call */
  readonly times?: number;
}

/** Controls the faults of a wrapped store. */
export interface FaultSwitch {
  /** Makes matching calls fail from now on. */
  inject(fault: InjectedFault): void;
  /** Removes every injected fault. */
  clear(): void;
  /** Calls that failed so far, as `method` names. */
  readonly failed: string[];
}

/** Wraps `target`; its methods behave as before until a fault is injected. */
export function withInjectedFaults<T extends object>(target: T, name: string): { store: T; faults: FaultSwitch } {
  const active: Array<{ fault: InjectedFault; left: number }> = [];
  const failed: string[] = [];
  const store = new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver) as unknown;
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      return (...args: unknown[]) => {
        const match = active.find(
          (entry) => entry.left > 0 && entry.fault.method === property && (entry.fault.when?.(...args) ?? true),
        );
        if (match) {
          match.left--;
          failed.push(property);
          return Promise.reject(new StoreError({ store: name, message: `injected fault in ${property}` }));
        }
        return (value as (...callArgs: unknown[]) => unknown).apply(object, args);
      };
    },
  });
  return {
    store,
    faults: {
      inject: (fault) => void active.push({ fault, left: fault.times ?? Number.POSITIVE_INFINITY }),
      clear: () => void (active.length = 0),
      failed,
    },
  };
}
