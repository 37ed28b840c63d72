/**
 * The operation log of the in-memory store: every scope's operations in scope-sequence order,
 * indexed so that claims and lease checks never scan every operation ever logged.
 * @module
 */
import { StoreError } from '../core/errors.js';
import type { Scope } from '../core/scope.js';
import type { StoreInput } from './_memory-rows.js';
import type { LeaseHandle, MemoryStore, Operation, OperationType } from './store.js';
import { compareUtf8 } from '../core/compare-utf8.js';
import { OPEN_OPERATIONS_PASSED, settledBeforeNewer, walkScopes } from './_operation-retention.js';

/** The in-memory operation log; `now` is the store's clock, `storeName` names it in errors. */
export class InMemoryOperationLog {
  readonly #now: () => Date;
  readonly #storeName: string;
  readonly #operations = new Map<string, Operation[]>();
  /** Where each operation sits in its scope's list. */
  readonly #locations = new Map<string, { memoryId: string; index: number }>();
  /** Each scope's queued or processing operations, in order. */
  readonly #pending = new Map<string, Operation[]>();
  readonly #deadCounts = new Map<string, number>();
  /** Where the next retention call starts (see `walkScopes`). */
  #retentionAfter = '';

  constructor(now: () => Date, storeName: string) {
    this.#now = now;
    this.#storeName = storeName;
  }

  /** The scope's operations in scope-sequence order (do not mutate). */
  of(memoryId: string): readonly Operation[] {
    return this.#operations.get(memoryId) ?? [];
  }

  pendingCount(memoryId?: string): number {
    if (memoryId !== undefined) return this.#pending.get(memoryId)?.length ?? 0;
    let count = 0;
    for (const queue of this.#pending.values()) count += queue.length;
    return count;
  }

  deadCount(memoryId: string): number {
    return this.#deadCounts.get(memoryId) ?? 0;
  }

  /** Appends an `applied` operation that did its work at once (settings, import, correction). */
  appendApplied(
    input: { operationId: string; memoryId: string; scope: Scope; runId: string; toolCallId: string },
    operationType: OperationType,
    payload: Readonly<Record<string, unknown>>,
  ): Operation {
    const at = this.#now().toISOString();
    const operation: Operation = Object.freeze({
      operationId: input.operationId,
      memoryId: input.memoryId,
      scope: input.scope,
      runId: input.runId,
      toolCallId: input.toolCallId,
      scopeSequence: this.#nextSequence(input.memoryId),
      operationType,
      status: 'applied',
      payload,
      errorText: '',
      attempt: 1,
      leaseOwner: null,
      leaseExpiresAt: null,
      availableAt: at,
      createdAt: at,
      updatedAt: at,
    });
    this.#append(operation);
    return operation;
  }

  enqueue(input: StoreInput<'enqueueOperation'>): Operation {
    const at = this.#now().toISOString();
    const operation: Operation = Object.freeze({
      operationId: input.operationId,
      memoryId: input.memoryId,
      scope: Object.freeze({ ...input.scope }),
      runId: input.runId,
      toolCallId: input.toolCallId,
      scopeSequence: this.#nextSequence(input.memoryId),
      operationType: input.operationType,
      status: 'queued',
      payload: Object.freeze({ ...input.payload }),
      errorText: '',
      attempt: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      availableAt: at,
      createdAt: at,
      updatedAt: at,
    });
    this.#append(operation);
    return operation;
  }

  claim(input: StoreInput<'claimOperation'>): Operation | undefined {
    const at = this.#now();
    const candidates =
      input.memoryId === undefined ? this.#pending.values() : [this.#pending.get(input.memoryId) ?? []];
    const now = at.toISOString();
    let best: Operation | undefined;
    for (const queue of candidates) {
      // The head is the scope's oldest pending operation: one runs at a time, in order.
      const head = queue[0];
      if (!head) continue;
      // A scope's claim takes over a head whose holder let its lease expire (it died or
      // stalled): without a worker's stale check, nothing else would ever run the scope again.
      if (input.memoryId !== undefined && isLeaseExpired(head, now)) {
        best = head;
        break;
      }
      if (head.status !== 'queued' || head.availableAt > now) continue;
      if (!best || head.createdAt < best.createdAt) best = head;
    }
    if (!best) return undefined;
    return this.#replace({
      ...best,
      status: 'processing',
      attempt: best.attempt + 1,
      ...(best.status === 'processing' ? { errorText: STALE_REQUEUED } : {}),
      leaseOwner: input.leaseOwner,
      leaseExpiresAt: new Date(at.getTime() + input.leaseMs).toISOString(),
      updatedAt: now,
    });
  }

  /** The leased operation, or `OPERATION_LEASE_LOST` when the lease lapsed or was taken over. */
  holdLease(handle: LeaseHandle): Operation {
    const operation = this.#find(handle.operationId);
    const expired = operation?.leaseExpiresAt != null && operation.leaseExpiresAt <= this.#now().toISOString();
    if (!operation || operation.status !== 'processing' || operation.leaseOwner !== handle.leaseOwner || expired) {
      throw new StoreError({
        store: this.#storeName,
        code: 'OPERATION_LEASE_LOST',
        message:
          `Operation ${handle.operationId} is no longer leased to ${handle.leaseOwner}; its result is ` + `discarded.`,
        data: { operationId: handle.operationId },
      });
    }
    return operation;
  }

  /** Ends a leased operation as `applied` (with a note) or `failed`. */
  finish(operation: Operation, status: 'applied' | 'failed', errorText: string): Operation {
    return this.#replace({
      ...operation,
      status,
      errorText,
      leaseOwner: null,
      leaseExpiresAt: null,
      updatedAt: this.#now().toISOString(),
    });
  }

  fail(input: StoreInput<'failOperation'>): Operation {
    const operation = this.holdLease(input);
    if (input.retryAfterMs === undefined) return this.finish(operation, 'failed', input.errorText);
    const at = this.#now();
    return this.#replace({
      ...operation,
      status: 'queued',
      ...(input.notAttempted ? { attempt: Math.max(0, operation.attempt - 1) } : {}),
      errorText: input.errorText,
      leaseOwner: null,
      leaseExpiresAt: null,
      availableAt: new Date(at.getTime() + input.retryAfterMs).toISOString(),
      updatedAt: at.toISOString(),
    });
  }

  markDead(input: StoreInput<'markOperationDead'>): Operation {
    const operation = this.holdLease(input);
    this.#deadCounts.set(operation.memoryId, this.deadCount(operation.memoryId) + 1);
    return this.#replace({
      ...operation,
      status: 'dead',
      errorText: input.errorText,
      leaseOwner: null,
      leaseExpiresAt: null,
      updatedAt: this.#now().toISOString(),
    });
  }

  retryDead(input: StoreInput<'retryDeadOperation'>): Operation | undefined {
    const operation = this.#find(input.operationId);
    if (!operation || operation.memoryId !== input.memoryId || operation.status !== 'dead') return undefined;
    // The next sequence counts the operation itself, as a new enqueue would.
    const scopeSequence = this.#nextSequence(operation.memoryId);
    this.#remove(operation);
    this.#deadCounts.set(operation.memoryId, (this.#deadCounts.get(operation.memoryId) ?? 1) - 1);
    const at = this.#now().toISOString();
    const retried: Operation = Object.freeze({
      ...operation,
      scopeSequence,
      status: 'queued',
      attempt: 0,
      availableAt: at,
      updatedAt: at,
    });
    this.#append(retried);
    return retried;
  }

  requeueStale(graceSeconds: number): number {
    const cutoff = new Date(this.#now().getTime() - graceSeconds * 1000).toISOString();
    // Collect first: requeueing changes the pending lists being walked.
    const stale: Operation[] = [];
    for (const queue of this.#pending.values()) {
      for (const operation of queue) {
        const expired = operation.leaseExpiresAt !== null && operation.leaseExpiresAt <= cutoff;
        if (operation.status === 'processing' && expired) stale.push(operation);
      }
    }
    for (const operation of stale) {
      this.#replace({
        ...operation,
        status: 'queued',
        leaseOwner: null,
        leaseExpiresAt: null,
        errorText: STALE_REQUEUED,
        updatedAt: this.#now().toISOString(),
      });
    }
    return stale.length;
  }

  page(memoryId: string, options: Parameters<MemoryStore['listOperationPage']>[1]): Operation[] {
    const all = this.of(memoryId);
    const page: Operation[] = [];
    for (let index = all.length - 1; index >= 0 && page.length < options.limit; index--) {
      const operation = all[index] as Operation;
      if (options.beforeSequence !== undefined && operation.scopeSequence >= options.beforeSequence) continue;
      if (options.status === undefined || operation.status === options.status) page.push(operation);
    }
    return page;
  }

  /**
   * Deletes the settled operations a retention call may (see `_operation-retention.ts`),
   * written at or before `cutoff`, at most `limit`; returns them by scope, each scope with
   * the ids deleted and the latest time one of them was written.
   */
  deleteSettled(
    cutoff: string,
    limit: number,
  ): Array<{ memoryId: string; operationIds: Set<string>; settledThrough: string }> {
    const deleted: Array<{ memoryId: string; operationIds: Set<string>; settledThrough: string }> = [];
    const ids = [...this.#operations.keys()].sort(compareUtf8);
    let remaining = limit;
    this.#retentionAfter = walkScopes(
      this.#retentionAfter,
      (after) => ids[firstAfter(ids, after)],
      (memoryId) => {
        const list = this.of(memoryId);
        // Below the scope's newest, whose sequence the next one is numbered after.
        const oldest = list.slice(0, Math.min(list.length - 1, limit + OPEN_OPERATIONS_PASSED));
        const chosen = settledBeforeNewer(oldest, cutoff, remaining);
        if (chosen.length === 0) return false;
        const operationIds = new Set(chosen.map((operation) => operation.operationId));
        this.#removeAll(memoryId, operationIds);
        const settledThrough = chosen.reduce(
          (latest, operation) => (operation.updatedAt > latest ? operation.updatedAt : latest),
          '',
        );
        deleted.push({ memoryId, operationIds, settledThrough });
        remaining -= chosen.length;
        return remaining === 0;
      },
    );
    return deleted;
  }

  forget(memoryId: string): void {
    for (const operation of this.of(memoryId)) this.#locations.delete(operation.operationId);
    this.#operations.delete(memoryId);
    this.#pending.delete(memoryId);
    this.#deadCounts.delete(memoryId);
  }

  clear(): void {
    this.#operations.clear();
    this.#locations.clear();
    this.#pending.clear();
    this.#deadCounts.clear();
  }

  #list(memoryId: string): Operation[] {
    let list = this.#operations.get(memoryId);
    if (!list) {
      list = [];
      this.#operations.set(memoryId, list);
    }
    return list;
  }

  /** The scope sequence after the last one of a scope's log (kept in sequence order). */
  #nextSequence(memoryId: string): number {
    return (this.of(memoryId).at(-1)?.scopeSequence ?? 0) + 1;
  }

  #append(operation: Operation): void {
    const list = this.#list(operation.memoryId);
    this.#locations.set(operation.operationId, { memoryId: operation.memoryId, index: list.length });
    list.push(operation);
    if (isPending(operation)) {
      let queue = this.#pending.get(operation.memoryId);
      if (!queue) {
        queue = [];
        this.#pending.set(operation.memoryId, queue);
      }
      queue.push(operation);
    }
  }

  #replace(next: Operation): Operation {
    const frozen = Object.freeze(next);
    const location = this.#locations.get(next.operationId);
    if (!location) return frozen;
    this.#list(location.memoryId)[location.index] = frozen;
    const queue = this.#pending.get(location.memoryId) ?? [];
    const position = queue.findIndex((candidate) => candidate.operationId === next.operationId);
    if (position >= 0) {
      if (isPending(frozen)) queue[position] = frozen;
      else queue.splice(position, 1);
      if (queue.length === 0) this.#pending.delete(location.memoryId);
    }
    return frozen;
  }

  /** Takes settled operations out of their scope's log, keeping the other operations' locations right. */
  #removeAll(memoryId: string, operationIds: ReadonlySet<string>): void {
    const kept = this.of(memoryId).filter((operation) => !operationIds.has(operation.operationId));
    for (const operationId of operationIds) this.#locations.delete(operationId);
    this.#operations.set(memoryId, kept);
    kept.forEach((operation, index) => this.#locations.set(operation.operationId, { memoryId, index }));
  }

  /** Takes an operation out of its scope's log, keeping the other operations' locations right. */
  #remove(operation: Operation): void {
    const list = this.#list(operation.memoryId);
    const index = list.findIndex((candidate) => candidate.operationId === operation.operationId);
    if (index < 0) return;
    list.splice(index, 1);
    this.#locations.delete(operation.operationId);
    for (let position = index; position < list.length; position++) {
      this.#locations.set((list[position] as Operation).operationId, { memoryId: operation.memoryId, index: position });
    }
  }

  #find(operationId: string): Operation | undefined {
    const location = this.#locations.get(operationId);
    return location ? this.#operations.get(location.memoryId)?.[location.index] : undefined;
  }
}

function isPending(operation: Operation): boolean {
  return operation.status === 'queued' || operation.status === 'processing';
}

/** The error text of an operation whose lease expired while processing, when it is queued or claimed again. */
const STALE_REQUEUED = 'requeued after stale processing operation';

/** Whether `operation` is processing under a lease that expired by `now`. */
function isLeaseExpired(operation: Operation, now: string): boolean {
  return operation.status === 'processing' && operation.leaseExpiresAt !== null && operation.leaseExpiresAt <= now;
}

/** The index of the first of `sorted` (in byte order) after `after`. */
function firstAfter(sorted: readonly string[], after: string): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareUtf8(sorted[middle] as string, after) <= 0) low = middle + 1;
    else high = middle;
  }
  return low;
}
