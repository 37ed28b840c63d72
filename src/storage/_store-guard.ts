/**
 * The one guard of a storage adapter: refuses every call after `dispose()` with
 * `STORE_DISPOSED`, and turns whatever a driver throws into a `StoreError` (ours pass
 * through). Private to `src/storage/`.
 * @module
 */
import { HarnessMemoryError, StoreError } from '../core/errors.js';

/** Options of {@link createStoreGuard}. */
export interface StoreGuardOptions {
  /** The store's name, as its errors carry it. */
  readonly store: string;
  /** @default 'The store was disposed; create a new one.' */
  readonly disposedMessage?: string;
  /** Maps a driver's error; ours are never passed. @default a `STORE_FAILED` naming the reason */
  readonly toError?: (error: unknown) => HarnessMemoryError;
}

/** A guard; `dispose` answers true only the first time, so closing happens once. */
export interface StoreGuard {
  readonly disposed: boolean;
  dispose(): boolean;
  /** Throws `STORE_DISPOSED` once disposed. */
  check(): void;
  /** Runs `work` when not disposed, with its errors mapped. */
  run<T>(work: () => T): T;
  /** Runs async `work` when not disposed, with its errors mapped. */
  runAsync<T>(work: () => Promise<T>): Promise<T>;
}

/** The error for any use after `dispose()`. */
export function disposedError(store: string, message = 'The store was disposed; create a new one.'): StoreError {
  return new StoreError({ store, code: 'STORE_DISPOSED', message });
}

/** A guard for the store named in `options`. */
export function createStoreGuard(options: StoreGuardOptions): StoreGuard {
  let disposed = false;
  const toError =
    options.toError ??
    ((error: unknown) =>
      new StoreError({
        store: options.store,
        message: `${options.store} failed: ${error instanceof Error ? error.message : String(error)}`,
        cause: error,
      }));
  const mapped = (error: unknown): unknown => (HarnessMemoryError.isInstance(error) ? error : toError(error));
  const check = (): void => {
    if (disposed) throw disposedError(options.store, options.disposedMessage);
  };
  return {
    get disposed() {
      return disposed;
    },
    dispose() {
      if (disposed) return false;
      disposed = true;
      return true;
    },
    check,
    run(work) {
      check();
      try {
        return work();
      } catch (error) {
        throw mapped(error);
      }
    },
    async runAsync(work) {
      check();
      try {
        return await work();
      } catch (error) {
        throw mapped(error);
      }
    },
  };
}
