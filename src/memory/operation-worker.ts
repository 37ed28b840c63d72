import { HarnessMemoryError, ModelCallError } from '../core/errors.js';
import type { RunningCalls } from './running-calls.js';
import type { IdGenerator } from '../core/ids.js';
import {
  clipMessage,
  MAX_PROMPT_MESSAGE_CHARS,
  reflectorNewObservationTokens,
  reflectorObservationLine,
} from '../core/memory-prompts.js';
import type { MemoryRecord, Observation, ObservationConfig, StoredReflection } from '../core/observation.js';
import { holdsToolOutput, provenanceOf } from '../core/observation-provenance.js';
import { replacementLinks, withReplacedImportance } from '../core/replaced-importance.js';
import { checkObserverAnswer } from '../core/check-observer-answer.js';
import { isNothingToObserve } from '../core/parse-observations.js';
import { formatReflection } from '../core/format-reflection.js';
import { hiddenFailureText, hideServerAddress } from '../core/public-error-text.js';
import type { FaultReporter } from '../core/fault.js';
import { parseReflection } from '../core/parse-reflection.js';
import { isRepetitive } from '../core/repetitive-text.js';
import { activeReflectionLinks, mayRestOnToolOutput, refuseToolSupersessions } from '../core/reflection-links.js';
import type { ReflectionLinks } from '../core/reflection-links.js';
import { selectReflectionContext } from '../core/reflection-context.js';
import { redactAndCut, redactSecrets } from '../core/redact-secrets.js';
import { stripInvisible } from '../core/sanitize-text.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { MemoryStore, Operation, PrefetchedObserve, StoredMessage } from '../storage/store.js';
import { DEFAULT_MAX_OUTPUT_BYTES, hasBoundedOutput } from './model-observer.js';
import type { Observer, Reflector } from './model-observer.js';
import { firstAfterSeq } from '../core/first-after-seq.js';
import { batchFailureOf } from './batch-failure.js';
import { untilStopped } from '../core/until-stopped.js';
import { cancelReason, isCancelled, observeCancelled } from './observe-cancelled.js';
import type { ReflectionBackoff } from './reflection-backoff.js';

/** What running one operation came to. */
export interface OperationOutcome {
  readonly operationId: string;
  readonly operationType: Operation['operationType'];
  /**
   * `cancelled`: the signal of the call running it aborted; the operation was put back in the
   * queue as it was, its attempt not counted (see {@link releaseOperation}).
   */
  readonly status: 'applied' | 'unchanged' | 'retrying' | 'failed' | 'dead' | 'cancelled';
  readonly observationsAdded: number;
  readonly reflected: boolean;
  /** True when the operation enqueued more work for its scope (a continuation or a reflection). */
  readonly followUp: boolean;
  /** Observations in the scope after an applied observe. */
  readonly observationCount?: number;
  /**
   * True when work of the scope may wait behind this operation with no caller to run it:
   * messages came in while it ran (their observe, from another process say, found the scope
   * busy and left its operation queued), or it failed for good. The scheduler then claims the
   * scope again before leaving it. Never set on the common path, which makes no such claim.
   */
  readonly othersMayWait?: boolean;
  readonly error?: HarnessMemoryError | Error;
}

/** Events the worker reports. */
export type WorkerEvent =
  | { readonly type: 'reflection-completed'; readonly operation: Operation; readonly trigger: 'auto' | 'reflect_now' }
  | {
      readonly type: 'operation-failed';
      readonly operation: Operation;
      readonly error: Error;
      /** What the event shows of `error`: its message, or only its code where server failures are hidden. */
      readonly errorText: string;
      readonly willRetry: boolean;
    }
  | { readonly type: 'operation-dead'; readonly operation: Operation; readonly errorText: string }
  | {
      readonly type: 'message-skipped';
      readonly operation: Operation;
      readonly messageSeq: number;
      readonly messageKey: string;
      readonly errorText: string;
    };

/** Everything the worker needs; owned by the observational memory service. */
export interface OperationWorkerContext {
  readonly store: MemoryStore;
  readonly observer: Observer | undefined;
  readonly reflector: Reflector | undefined;
  readonly estimator: TokenEstimator;
  readonly generateId: IdGenerator;
  readonly workerId: string;
  readonly leaseMs: number;
  /**
   * Attempts an operation gets, whatever ends them (a retryable failure, or a crash that let its lease expire);
   * then it is `dead`.
   */
  readonly maxAttempts: number;
  readonly retryDelayMs: number;
  readonly maxBatchTokens: number;
  /** Highest importance of an observation made only from tool output. */
  readonly toolImportanceCap: number;
  /** Whether an operation's `model` (its run's model) is asked instead of the model's own. */
  readonly followRunModel: boolean;
  /** Whether secrets are redacted from what the observer and reflector write, as from what they read. */
  readonly redact: boolean;
  readonly effective: (record: { enabled: boolean | null; config: Partial<ObservationConfig> } | undefined) => {
    enabled: boolean;
    config: ObservationConfig;
  };
  readonly onEvent: (event: WorkerEvent) => void;
  /**
   * Whether a server failure (a store's, a bug) is shown in the operation log and the events
   * only by its code, its detail given to {@link reportFault} (the harness server: its tenants
   * have no business learning where its database is).
   */
  readonly hideServerFailures: boolean;
  readonly reportFault: FaultReporter;
  /** The scope's observations in seq order (served from the in-process cache). */
  readonly observationsOf: (memoryId: string, record: MemoryRecord) => Promise<readonly Observation[]>;
  /** Told of observations just applied, so the cache need not read them back. */
  readonly observationsApplied: (memoryId: string, record: MemoryRecord, observations: readonly Observation[]) => void;
  /** The scope's whole supersession set (served from the in-process cache). */
  readonly linksOf: (memoryId: string, record: MemoryRecord) => Promise<ReflectionLinks>;
  readonly now: () => Date;
  /** The model calls in flight by scope, which `forget` aborts. */
  readonly calls?: RunningCalls;
  /** Scopes whose automatic reflections wait after one failed for good. @default none wait */
  readonly reflectionBackoff?: ReflectionBackoff;
  /** Testing hook: called at step boundaries of an operation; crash tests kill the process there. */
  readonly faultPoint?: ((point: WorkerFaultPoint) => void) | undefined;
}

/** Step boundaries of an operation at which {@link OperationWorkerContext.faultPoint} is called. */
export type WorkerFaultPoint = 'after_claim' | 'after_llm';

/**
 * Runs claimed operations: reads what it needs, calls the model outside any transaction,
 * then applies the result atomically under the lease. Failures are recorded, and the
 * messages stay unobserved so nothing is lost. When `signal` (an observe caller's) aborts,
 * the model call is aborted and the operation released ({@link releaseOperation}): `cancelled`.
 */
export async function runOperation(
  context: OperationWorkerContext,
  operation: Operation,
  prefetched?: PrefetchedObserve,
  signal?: AbortSignal,
): Promise<OperationOutcome> {
  const lease = { operationId: operation.operationId, memoryId: operation.memoryId, leaseOwner: context.workerId };
  // Claimed once more than allowed: every earlier attempt ended with its lease expiring (the
  // process died or stalled), so running it again would likely crash again. Park it.
  if (operation.attempt > context.maxAttempts) {
    return bury(
      context,
      operation,
      `gave up after ${context.maxAttempts} attempts that never finished (the process stopped or stalled ` +
        `while holding the lease); last: ${operation.errorText || 'no error recorded'}`,
    );
  }
  context.faultPoint?.('after_claim');
  try {
    if (operation.operationType === 'observe')
      return await runObserve(
        context,
        operation,
        prefetched?.operationId === operation.operationId ? prefetched : undefined,
        signal,
      );
    const reflected = await runReflect(context, operation, signal);
    if (reflected.status === 'applied') context.reflectionBackoff?.succeeded(operation.memoryId);
    return reflected;
  } catch (error) {
    // Not a failure: no attempt used, no failure event or fault, nothing for the circuit.
    if (isCancelled(error)) return releaseOperation(context, operation, error);
    const failure = error instanceof Error ? error : new Error(String(error));
    if (HarnessMemoryError.isInstance(failure) && failure.code === 'OPERATION_LEASE_LOST') {
      return outcome(operation, 'failed', 0, false, failure);
    }
    const retryable = isRetryable(failure);
    // A call the model's circuit failed fast never reached the model: the operation waits for the
    // circuit without using up an attempt, or other scopes' failures would bury it untried.
    const notSent = ModelCallError.isInstance(failure) && failure.notSent;
    const willRetry = retryable && (notSent || operation.attempt < context.maxAttempts);
    // Shown to the tenant (the operation's error, `memory.operation.*` events): no server
    // address, and where server failures are hidden none of a store's detail either.
    const hidden = hiddenFailureText(failure, context.hideServerFailures);
    if (hidden !== undefined) {
      context.reportFault({
        component: 'memory-worker',
        message: `${operation.operationType} operation ${operation.operationId} failed`,
        error: failure,
        runId: operation.runId,
        operationId: operation.operationId,
      });
    }
    const errorText = hidden ?? shownErrorText(hideServerAddress(failure.message, failure));
    const failed: WorkerEvent = {
      type: 'operation-failed',
      operation,
      error: failure,
      errorText: hidden ?? failure.message,
      willRetry,
    };
    if (!willRetry) reflectionFailed(context, operation);
    if (retryable && !willRetry) {
      context.onEvent(failed);
      return bury(context, operation, `gave up after ${operation.attempt} attempts: ${errorText}`, failure);
    }
    try {
      await context.store.failOperation({
        ...lease,
        errorText: willRetry ? shownErrorText(`${errorText}${retryAfterCut(failure)}`) : errorText,
        ...(willRetry ? { retryAfterMs: retryDelay(context, notSent ? 1 : operation.attempt, failure) } : {}),
        ...(notSent ? { notAttempted: true } : {}),
      });
    } catch (storeError) {
      if (!(HarnessMemoryError.isInstance(storeError) && storeError.code === 'OPERATION_LEASE_LOST')) throw storeError;
    }
    context.onEvent(failed);
    if (willRetry) return outcome(operation, 'retrying', 0, false, failure);
    return { ...outcome(operation, 'failed', 0, false, failure), othersMayWait: true };
  }
}

/** Tells the back-off of an automatic reflection that failed for good, at the unreflected total that queued it. */
function reflectionFailed(context: OperationWorkerContext, operation: Operation): void {
  const tokens = operation.payload['unreflected_tokens'];
  if (operation.operationType === 'reflect' && typeof tokens === 'number')
    context.reflectionBackoff?.failed(operation.memoryId, tokens, context.now());
}

/**
 * Puts a claimed operation its caller cancelled back in the queue as it was: available at
 * once, its attempt not counted, its error text unchanged, its lease given back (not left to
 * expire), so the scope's next observe, drain or worker claims it at once. No event: nothing
 * failed.
 */
export async function releaseOperation(
  context: OperationWorkerContext,
  operation: Operation,
  error: Error,
): Promise<OperationOutcome> {
  try {
    await context.store.failOperation({
      operationId: operation.operationId,
      memoryId: operation.memoryId,
      leaseOwner: context.workerId,
      errorText: operation.errorText,
      retryAfterMs: 0,
      notAttempted: true,
    });
  } catch (storeError) {
    // Taken over already (the lease lapsed): whoever holds it now runs it.
    if (!(HarnessMemoryError.isInstance(storeError) && storeError.code === 'OPERATION_LEASE_LOST')) throw storeError;
  }
  return outcome(operation, 'cancelled', 0, false, error);
}

/** Parks an operation as `dead` (its attempts are used up) and reports it. */
async function bury(
  context: OperationWorkerContext,
  operation: Operation,
  errorText: string,
  cause?: Error,
): Promise<OperationOutcome> {
  const lease = { operationId: operation.operationId, memoryId: operation.memoryId, leaseOwner: context.workerId };
  const text = shownErrorText(errorText);
  // The caller sees the failure itself when there was one (a model error, say), else why the operation was parked.
  const error =
    cause ??
    new HarnessMemoryError({
      code: 'OPERATION_DEAD',
      component: 'operation-worker',
      message: `operation ${operation.operationId} is dead: ${text}. Retry it by hand once the cause is fixed.`,
      data: { operationId: operation.operationId },
    });
  try {
    await context.store.markOperationDead({ ...lease, errorText: text });
  } catch (storeError) {
    if (HarnessMemoryError.isInstance(storeError) && storeError.code === 'OPERATION_LEASE_LOST')
      return outcome(operation, 'failed', 0, false, storeError);
    throw storeError;
  }
  context.onEvent({ type: 'operation-dead', operation, errorText: text });
  return { ...outcome(operation, 'dead', 0, false, error), othersMayWait: true };
}

async function runObserve(
  context: OperationWorkerContext,
  operation: Operation,
  prefetched: PrefetchedObserve | undefined,
  signal: AbortSignal | undefined,
): Promise<OperationOutcome> {
  const { store } = context;
  const lease = { operationId: operation.operationId, memoryId: operation.memoryId, leaseOwner: context.workerId };
  const record = prefetched ? prefetched.record : await store.getRecord(operation.memoryId);
  const { enabled, config } = context.effective(record);
  if (!record || !enabled) {
    await store.completeWithoutChange({ ...lease, note: 'scope disabled' });
    return outcome(operation, 'unchanged', 0, false);
  }
  // The threshold is the unobserved total, as when the operation was enqueued, not the
  // batch's: a batch cut short by a large message, or a threshold above the batch cap, must
  // still be observed (the progress guarantee).
  if (record.unobservedMessageTokens < config.observeMinTokens) {
    await store.completeWithoutChange({ ...lease, note: 'nothing to observe' });
    return outcome(operation, 'unchanged', 0, false);
  }
  // Only the oldest messages, about one batch: a backlog is not read whole for every batch.
  const pending = prefetched
    ? prefetched.messages
    : await store.listUnobservedMessages(operation.memoryId, record.lastMessageSeq, {
        maxTokens: context.maxBatchTokens,
      });
  if (pending.length === 0) {
    await store.completeWithoutChange({ ...lease, note: 'nothing to observe' });
    return outcome(operation, 'unchanged', 0, false);
  }
  let batch = takeBatch(pending, context.maxBatchTokens, context.estimator);
  // After two failed attempts the batch itself may be what fails (a slow model timing out on
  // all of it, a message the provider fails on, a token rate limit it exceeds): each further
  // retry asks for half of what the last one did, so the messages before a bad one are
  // observed and the rest follow. A single failure (a rate limit, a blip) retries it whole.
  if (operation.attempt > 2)
    batch = batch.slice(0, Math.max(1, Math.ceil(batch.length / 2 ** (operation.attempt - 2))));
  if (!context.observer) throw notConfigured('observer');
  const all = await context.observationsOf(operation.memoryId, record);
  const unreflected = recentWithin(
    all,
    firstAfterSeq(all, record.reflection?.throughSeq ?? 0),
    config.reflectThresholdTokens,
  );
  const observer = context.observer;
  let refusal: Error | undefined;
  const answer = await withinLease(context, operation.memoryId, signal, async (abortSignal) => {
    for (;;) {
      try {
        return await observer.observe({
          scope: record.scope,
          config,
          messages: batch.map((message) => ({
            seq: message.seq,
            role: message.role,
            content: message.content,
            ...(message.name ? { name: message.name } : {}),
          })),
          reflection: record.reflection,
          unreflected,
          ...runModelOf(context, operation),
          abortSignal,
        });
      } catch (error) {
        // An answer cut off by the model's token limit, a prompt over the model's context or one
        // its content filter refuses would fail again for the same batch, and the scope would
        // never be observed past it: its first half is asked instead (the rest is the
        // follow-up's), down to one message.
        const failure = batchFailureOf(error);
        if (failure === undefined) throw error;
        if (batch.length > 1) {
          batch = batch.slice(0, Math.ceil(batch.length / 2));
          continue;
        }
        // One message the model refuses would be refused at every observe of the scope, and
        // nothing after it would ever be observed: it is passed over, said so in the log and an
        // event. A truncation or an over-context at one message may be the configuration's
        // (a small output limit or context), which would pass over every message: those fail.
        if (failure !== 'refused' || !(error instanceof Error)) throw error;
        refusal = error;
        return [];
      }
    }
  });
  context.faultPoint?.('after_llm');
  const parsed = refusal || hasBoundedOutput(observer) ? answer : checkObserverAnswer(answer);
  const throughMessageSeq = (batch[batch.length - 1] as StoredMessage).seq;
  const skipNote = refusal ? skippedNote(batch[0] as StoredMessage, refusal) : undefined;
  const shown = parsed.some((item) => item.replacesSeqs?.length)
    ? new Map(unreflected.map((observation) => [observation.seq, observation]))
    : new Map<number, Observation>();
  // A page the batch holds may be what asked for the REPLACES line: its weight is not passed on.
  const batchHasTool = holdsToolOutput(batch);
  const applied = await store.completeObservation({
    ...lease,
    observations: parsed.flatMap((item) => {
      const content = modelText(context, item.content);
      if (content === '') return [];
      const weighed = batchHasTool ? item : withReplacedImportance(item, shown);
      const provenance = provenanceOf(weighed, batch, context.toolImportanceCap);
      const links = replacementLinks(item.replacesSeqs, provenance, shown, context.toolImportanceCap, batchHasTool);
      return [{ content, tokenCount: context.estimator.estimate(content), ...provenance, ...links }];
    }),
    throughMessageSeq,
    markerIds: { start: context.generateId('mk'), end: context.generateId('mk') },
    ...(skipNote ? { note: skipNote } : {}),
    // What a REPLACES line named was read with this record: a correction since drops its links.
    correctionCount: record.correctionCount,
  });
  if (skipNote) {
    const message = batch[0] as StoredMessage;
    context.onEvent({
      type: 'message-skipped',
      operation,
      messageSeq: message.seq,
      messageKey: message.messageKey,
      errorText: skipNote,
    });
  }
  const enqueue = (operationType: 'observe' | 'reflect', payload: Record<string, unknown>): Promise<Operation> =>
    store.enqueueOperation({
      operationId: context.generateId('op'),
      scope: record.scope,
      memoryId: operation.memoryId,
      operationType,
      // Work an operation leads to is done for the same run, with the same model.
      payload: { ...payload, ...runModelPayload(runModelOf(context, operation).modelId) },
      runId: operation.runId,
      toolCallId: operation.toolCallId,
    });
  context.observationsApplied(operation.memoryId, applied.record, applied.observations);
  let followUp = false;
  // What this operation was for and left out of its batch; messages appended since it read the
  // record came with observes of their own. Message seqs are dense, so seqs count messages.
  const restMessages = record.lastMessageSeq - throughMessageSeq;
  const restTokens = record.unobservedMessageTokens - batch.reduce((sum, message) => sum + message.tokenCount, 0);
  if (restMessages > 0 && restTokens >= config.observeMinTokens) {
    await enqueue('observe', { messages: restMessages, continued_from: operation.operationId });
    followUp = true;
  }
  const unreflectedTokens = applied.record.unreflectedObservationTokens;
  const threshold = config.reflectThresholdTokens;
  const backoff = context.reflectionBackoff;
  if (
    context.reflector &&
    threshold > 0 &&
    unreflectedTokens >= threshold &&
    (backoff === undefined || backoff.allows(operation.memoryId, unreflectedTokens, threshold, context.now()))
  ) {
    await enqueue('reflect', { unreflected_tokens: applied.record.unreflectedObservationTokens });
    followUp = true;
  }
  return {
    ...outcome(operation, 'applied', applied.observations.length, false),
    followUp,
    observationCount: applied.record.observationCount,
    ...othersMayWait(record, applied.record),
  };
}

async function runReflect(
  context: OperationWorkerContext,
  operation: Operation,
  signal: AbortSignal | undefined,
): Promise<OperationOutcome> {
  const { store } = context;
  const lease = { operationId: operation.operationId, memoryId: operation.memoryId, leaseOwner: context.workerId };
  const record = await store.getRecord(operation.memoryId);
  const { enabled, config } = context.effective(record);
  const automatic = operation.operationType === 'reflect';
  const due = automatic
    ? (record?.unreflectedObservationTokens ?? 0) >= config.reflectThresholdTokens && config.reflectThresholdTokens > 0
    : true;
  if (!record || !enabled || record.observationCount === 0 || !due) {
    await store.completeWithoutChange({ ...lease, note: 'nothing to reflect' });
    return outcome(operation, 'unchanged', 0, false);
  }
  if (!context.reflector) throw notConfigured('reflector');
  const previousThrough = record.reflection?.throughSeq ?? 0;
  // The reflector sees the existing reflection plus what it does not cover yet, oldest
  // first and bounded (anything left over triggers the next reflection), and, one clipped
  // line each, earlier observations still in force that the new ones may replace: its
  // input is bounded by the configuration, however long the conversation.
  const all = await context.observationsOf(operation.memoryId, record);
  // Counted as the lines the prompt shows, so the bound holds however short the observations.
  const lineCost = (observation: Observation): number =>
    context.estimator.estimate(`${reflectorObservationLine(observation)}\n`);
  let observations = oldestWithin(
    all,
    firstAfterSeq(all, previousThrough),
    reflectorNewObservationTokens(config),
    lineCost,
  );
  if (observations.length === 0)
    observations = recentWithin(all, 0, Math.max(config.reflectThresholdTokens, 1), lineCost);
  const links = activeReflectionLinks(await context.linksOf(operation.memoryId, record), all);
  const listed = new Set(observations.map((observation) => observation.seq));
  const shown = selectReflectionContext({
    observations: all,
    throughSeq: previousThrough,
    links,
    config,
    estimator: context.estimator,
  });
  const references = shown.references.filter((observation) => !listed.has(observation.seq));
  const contradictions = shown.contradictions;
  const reflector = context.reflector;
  const answer = await withinLease(context, operation.memoryId, signal, (abortSignal) =>
    reflector.reflect({
      scope: record.scope,
      config,
      reflection: record.reflection,
      observations,
      references,
      contradictions,
      ...runModelOf(context, operation),
      abortSignal,
    }),
  );
  context.faultPoint?.('after_llm');
  // A reflector of a library user's own is held to what the model reflector accepts.
  if (
    typeof answer !== 'string' ||
    (!hasBoundedOutput(reflector) && Buffer.byteLength(answer) > DEFAULT_MAX_OUTPUT_BYTES)
  ) {
    throw new HarnessMemoryError({
      code: 'MODEL_OUTPUT_INVALID',
      component: 'reflector',
      message:
        typeof answer === 'string'
          ? `The reflector's answer is larger than ${DEFAULT_MAX_OUTPUT_BYTES} bytes; nothing was stored.`
          : "The reflector's answer is not a string; nothing was stored.",
      data: { role: 'reflector', reason: typeof answer === 'string' ? 'too_large' : 'invalid' },
    });
  }
  let raw = modelText(context, answer);
  // The model reflector refused this already; a library user's own is held to the same.
  if (!hasBoundedOutput(reflector) && isRepetitive(raw)) {
    throw new HarnessMemoryError({
      code: 'MODEL_OUTPUT_INVALID',
      component: 'reflector',
      message:
        "The reflector's answer is mostly the same lines repeated; nothing was stored, the last reflection is kept.",
      data: { role: 'reflector', reason: 'repetitive' },
    });
  }
  let structured = parseReflection(raw);
  const noSummary = structured.summary === '' || isNothingToObserve(structured.summary);
  // Supersessions or contradictions under an empty summary ("nothing else changed"): the
  // last summary is carried forward with them, rather than losing what they found.
  const previous = record.reflection?.structured.summary ?? '';
  if (
    noSummary &&
    previous !== '' &&
    structured.schemaVersion === 1 &&
    structured.supersessions.length + structured.contradictions.length > 0
  ) {
    structured = { ...structured, summary: previous };
    raw = formatReflection(structured);
  } else if (noSummary) {
    // A reflection replaces the last one whole: one without a summary would erase it.
    throw new HarnessMemoryError({
      code: 'MODEL_OUTPUT_INVALID',
      component: 'reflector',
      message:
        'reflector answered without a summary (' +
        `${JSON.stringify(redactAndCut(raw, 80))}); the last reflection was kept.`,
      data: { role: 'reflector', reason: 'no_summary' },
    });
  }
  // A reflector that followed text a tool returned may list it as replacing the user's rule:
  // stored as a contradiction, written back so the reflection says what the set holds.
  const settled = refuseToolSupersessions(structured, all, context.toolImportanceCap);
  if (settled.refused > 0) {
    structured = settled.structured;
    raw = formatReflection(structured);
  }
  const throughSeq = Math.max(previousThrough, observations.at(-1)?.seq ?? 0);
  // An observation corrected or deleted while the reflector ran may be restated in its answer.
  const correctionCount = await reflectionCorrectionCount(context, operation.memoryId, record, [
    ...observations,
    ...references,
  ]);
  const applied = await store.completeReflection({
    ...lease,
    reflection: {
      raw,
      structured,
      tokenCount: context.estimator.estimate(raw),
      throughSeq,
      createdAt: context.now().toISOString(),
    },
    markerId: context.generateId('mk'),
    // A reference to an observation the prompt did not show is invented or injected.
    citableSeqs: [...observations, ...references].map((observation) => observation.seq),
    correctionCount,
    refusedReferences: settled.refused,
  });
  // The store kept none of it; the unreflected tokens it left make the next observe's reflection due.
  if (applied.correctionCount !== correctionCount) return outcome(operation, 'unchanged', 0, false);
  context.onEvent({ type: 'reflection-completed', operation, trigger: automatic ? 'auto' : 'reflect_now' });
  return { ...outcome(operation, 'applied', 0, true), ...othersMayWait(record, applied) };
}

/**
 * The correction count a reflection is applied under (`completeReflection` stores it only while
 * the record's is the same): the one when the reflector's input was read (`before`), or the
 * current one when every correction since left that input true: the same record and
 * reflection, and each observation the reflector was shown (`shown`) still there with the same
 * text, on the same side of the tool cap. An importance changed, or an observation it was not
 * shown corrected, then does not throw the reflection away (and the model call with it); a
 * correction after this read still does.
 */
async function reflectionCorrectionCount(
  context: OperationWorkerContext,
  memoryId: string,
  before: MemoryRecord,
  shown: readonly Observation[],
): Promise<number> {
  const current = await context.store.getRecord(memoryId);
  if (current === undefined || current.correctionCount === before.correctionCount) return before.correctionCount;
  if (current.createdAt !== before.createdAt || !sameReflection(current.reflection, before.reflection))
    return before.correctionCount;
  const now = await context.observationsOf(memoryId, current);
  const cap = context.toolImportanceCap;
  const unchanged = shown.every((observation) => {
    const found = now[firstAfterSeq(now, observation.seq - 1)];
    // The importance may move an observation across the tool cap, which decides what the
    // reflection's supersessions may retire (`refuseToolSupersessions`, run on what was read).
    return (
      found?.seq === observation.seq &&
      found.content === observation.content &&
      mayRestOnToolOutput(found, cap) === mayRestOnToolOutput(observation, cap)
    );
  });
  return unchanged ? current.correctionCount : before.correctionCount;
}

function sameReflection(a: StoredReflection | null, b: StoredReflection | null): boolean {
  return a === b || (a !== null && b !== null && a.createdAt === b.createdAt && a.raw === b.raw);
}

/**
 * `{othersMayWait: true}` when messages were appended to the scope between `before`, the record
 * an operation read, and `after`, the one its apply returned: their observe may have found the
 * scope busy (in another process, whose caller answered `queued`) and left its operation queued.
 */
function othersMayWait(before: MemoryRecord, after: MemoryRecord): { othersMayWait?: true } {
  return after.lastMessageSeq > before.lastMessageSeq ? { othersMayWait: true } : {};
}

/**
 * Runs a model call with a signal that aborts once 80% of the lease is gone, so the call
 * ends while the result can still be applied. The timer is cleared as soon as the call
 * settles: `AbortSignal.timeout` would leave one timer per operation pending for minutes.
 * When `cancel` (the observe caller's signal) aborts, the call is aborted and this rejects at
 * once with `CANCELLED`, even for an observer that ignores its signal (its answer is dropped).
 */
async function withinLease<T>(
  context: OperationWorkerContext,
  memoryId: string,
  cancel: AbortSignal | undefined,
  call: (abortSignal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (cancel?.aborted) throw observeCancelled(cancel.reason);
  const controller = new AbortController();
  const onCancel = (): void => controller.abort(cancelReason());
  cancel?.addEventListener('abort', onCancel, { once: true });
  const done = context.calls?.add(memoryId, controller);
  const cutOffMs = Math.max(1, Math.floor(context.leaseMs * 0.8));
  // A deadline, not a cancellation: the reason is a `TimeoutError`, which the model adapters
  // and the circuit breaker take for a timeout (retryable, counted), unlike `forget`'s abort.
  // Made only when the lease runs out: a DOMException captures a stack, which every call
  // would pay for.
  let deadline: DOMException | undefined;
  const timer = setTimeout(() => {
    deadline = new DOMException(leaseCutOffText(cutOffMs), 'TimeoutError');
    controller.abort(deadline);
  }, cutOffMs);
  timer.unref?.();
  try {
    return await untilStopped(call(controller.signal), cancel);
  } catch (error) {
    // The caller's cancel comes first, whatever the model made of it: the operation did not fail.
    if (cancel?.aborted) throw observeCancelled(cancel.reason);
    // Whatever the model (or a custom observer) made of the abort, the operation failed by
    // running out of its lease: a timeout, retried with backoff like the model's own.
    if (deadline === undefined || controller.signal.reason !== deadline) throw error;
    throw new ModelCallError({
      message: deadline.message,
      ...(ModelCallError.isInstance(error) && error.url !== undefined ? { url: error.url } : {}),
      retryable: true,
      cause: error,
    });
  } finally {
    clearTimeout(timer);
    cancel?.removeEventListener('abort', onCancel);
    done?.();
  }
}

/** Why a model call stopped at 80% of the lease, and what to change. */
function leaseCutOffText(cutOffMs: number): string {
  return (
    `The model call outlasted the operation's lease: it was stopped after ${cutOffMs} ms (80% of the lease), ` +
    'so that its result could still be applied, and will be retried. Make the lease (`stale_operation_seconds`, ' +
    "the library's `leaseMs`) longer than the model's timeout, or the model's timeout shorter."
  );
}

/**
 * The oldest unobserved messages whose prompt cost fits `maxTokens`, and always at least
 * one: a message costs what the observer is shown of it, so one longer than
 * `MAX_PROMPT_MESSAGE_CHARS` costs its clipped head, and no message can hold a batch back.
 */
function takeBatch(messages: readonly StoredMessage[], maxTokens: number, estimator: TokenEstimator): StoredMessage[] {
  const batch: StoredMessage[] = [];
  let tokens = 0;
  for (const message of messages) {
    const cost =
      message.content.length > MAX_PROMPT_MESSAGE_CHARS
        ? estimator.estimate(clipMessage(message.content))
        : message.tokenCount;
    if (batch.length > 0 && tokens + cost > maxTokens) break;
    batch.push(message);
    tokens += cost;
  }
  return batch;
}

// Both walk the scope's cached observations in place from `start`: copying a slice of a
// large scope on every operation would make each observe cost grow with the scope.

const storedTokens = (observation: Observation): number => observation.tokenCount;

/** The newest observations at or after `start` whose cost fits `maxTokens` (at least one), oldest first. */
function recentWithin(
  observations: readonly Observation[],
  start: number,
  maxTokens: number,
  cost = storedTokens,
): Observation[] {
  const kept: Observation[] = [];
  let tokens = 0;
  for (let index = observations.length - 1; index >= start; index--) {
    const observation = observations[index] as Observation;
    const tokensOf = cost(observation);
    if (tokens + tokensOf > maxTokens && kept.length > 0) break;
    kept.push(observation);
    tokens += tokensOf;
  }
  return kept.reverse();
}

/** The oldest observations at or after `start` whose cost fits `maxTokens` (at least one). */
function oldestWithin(
  observations: readonly Observation[],
  start: number,
  maxTokens: number,
  cost = storedTokens,
): Observation[] {
  const kept: Observation[] = [];
  let tokens = 0;
  for (let index = start; index < observations.length; index++) {
    const observation = observations[index] as Observation;
    const tokensOf = cost(observation);
    if (tokens + tokensOf > maxTokens && kept.length > 0) break;
    kept.push(observation);
    tokens += tokensOf;
  }
  return kept;
}

function isRetryable(error: Error): boolean {
  if (
    ModelCallError.isInstance(error) ||
    (HarnessMemoryError.isInstance(error) && error.code === 'MODEL_CALL_FAILED')
  ) {
    return (error as ModelCallError).isRetryable ?? true;
  }
  if (HarnessMemoryError.isInstance(error)) return false;
  // Timeouts and unexpected errors from a model adapter may pass; bad output never does.
  return true;
}

/** The longest wait a server's `Retry-After` gets: a longer one (or an absurd date) is cut to it. */
const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/**
 * How long a failed operation waits in the queue before its next attempt: the backoff (at most
 * a lease), or the wait the server asked for (`Retry-After`, through the error's `retryAfterMs`)
 * when longer, however much longer than the lease, up to {@link MAX_RETRY_AFTER_MS}. The
 * operation waits as `queued` (its `availableAt`), holding no lease: the next attempt never
 * comes before the server allows it.
 */
function retryDelay(context: OperationWorkerContext, attempt: number, error: Error): number {
  const exponential = context.retryDelayMs * 2 ** Math.max(0, attempt - 1);
  const jittered = exponential / 2 + Math.random() * (exponential / 2);
  return Math.max(retryAfterOf(error) ?? 0, Math.min(jittered, context.leaseMs));
}

/** What the error text adds when the wait the server asked for was cut to {@link MAX_RETRY_AFTER_MS}. */
function retryAfterCut(error: Error): string {
  const hinted = ModelCallError.isInstance(error) ? error.retryAfterMs : undefined;
  return hinted !== undefined && hinted > MAX_RETRY_AFTER_MS
    ? ` (the server asked to wait ${Math.round(hinted / 1000)} s; the operation waits 24 h at most)`
    : '';
}

/** The wait a model error asked for, within {@link MAX_RETRY_AFTER_MS}; undefined when none. */
function retryAfterOf(error: Error): number | undefined {
  const hinted = ModelCallError.isInstance(error) ? error.retryAfterMs : undefined;
  return hinted === undefined || !(hinted >= 0) ? undefined : Math.min(hinted, MAX_RETRY_AFTER_MS);
}

function notConfigured(role: 'observer' | 'reflector'): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'MODEL_NOT_CONFIGURED',
    component: role,
    message: `${role} is not configured. Pass \`model\` (or \`${role}\`) to createObservationalMemory.`,
    data: { role },
  });
}

function outcome(
  operation: Operation,
  status: OperationOutcome['status'],
  observationsAdded: number,
  reflected: boolean,
  error?: Error,
): OperationOutcome {
  return {
    operationId: operation.operationId,
    operationType: operation.operationType,
    status,
    observationsAdded,
    reflected,
    followUp: false,
    ...(error ? { error } : {}),
  };
}

/** `{ modelId }` of the run an operation works for, when memory follows the run's model and it named one. */
function runModelOf(context: OperationWorkerContext, operation: Operation): { modelId?: string } {
  const model = operation.payload['model'];
  return context.followRunModel && typeof model === 'string' && model !== '' ? { modelId: model } : {};
}

/** The payload field naming the run's model, when there is one. */
export function runModelPayload(modelId: string | undefined): { model?: string } {
  return modelId === undefined || modelId === '' ? {} : { model: modelId };
}

/**
 * What a memory model wrote, as it is stored: without invisible characters, and with secrets
 * redacted. The transcript was redacted before the model read it, but a secret given in
 * pieces (half in one message, half in the next) passes that check and can come back whole.
 */
function modelText(context: OperationWorkerContext, text: string): string {
  const visible = stripInvisible(text).trim();
  return context.redact ? redactSecrets(visible).text : visible;
}

/**
 * An error as the operation log and the `memory.*` events show it to the tenant: at most 2,000
 * characters, without control characters (a NUL Postgres cannot store, a terminal's escape
 * sequence from a model server's message) or lone surrogates, secrets redacted.
 */
function shownErrorText(text: string): string {
  // Redacted, then cut: cut first, a secret could be left too short for any rule to find.
  return redactAndCut(stripInvisible(text), 2000);
}

/** The log's note for a message passed over: which one, and the refusal (without the server's address). */
function skippedNote(message: StoredMessage, refusal: Error): string {
  const said = redactAndCut(hideServerAddress(refusal.message, refusal), 1000);
  return shownErrorText(
    `skipped message ${message.seq} (${message.messageKey}): the model refused it, so it is not observed. ${said}`,
  );
}
