/**
 * Errors several storage adapters throw alike. Private to `src/storage/`.
 * @module
 */
import { StoreError } from '../core/errors.js';

/** The error of a write refused because its scope was forgotten since the writer read its generation. */
export function scopeForgottenError(store: string, memoryId: string): StoreError {
  return new StoreError({
    store,
    code: 'SCOPE_FORGOTTEN',
    message:
      `Scope ${memoryId} was forgotten after this work began; nothing was stored. Start again from ` +
      `the scope as it is now.`,
    data: { memoryId },
  });
}
