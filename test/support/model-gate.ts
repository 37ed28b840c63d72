/**
 * A gate that holds a scripted model call mid-flight: the call awaits `pass()`, the test awaits
 * `inCall` (the call has begun) and then `release()`s it.
 * @module
 */

/** See {@link createModelGate}. */
export interface ModelGate {
  /** Resolves once a call reached `pass()`. */
  readonly inCall: Promise<void>;
  /** Lets every call waiting in `pass()` go on. */
  release(): void;
  /** Called by the model: marks the call begun, then waits for `release()`. */
  pass(): Promise<void>;
}

/** A new, closed gate. */
export function createModelGate(): ModelGate {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const inCall = new Promise<void>((resolve) => (entered = resolve));
  return {
    inCall,
    release,
    pass() {
      entered();
      return gate;
    },
  };
}
