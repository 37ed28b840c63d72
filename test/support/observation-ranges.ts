/** Checks shared by the durability and replica tests: which message seqs each observation covers. */

/** The observation columns the checks read. */
export interface RangeRows {
  readonly observations: ReadonlyArray<{
    readonly memory_id: string;
    readonly seq: number;
    readonly content: string;
    readonly source_start_seq: number;
    readonly source_end_seq: number;
  }>;
}

const RANGE = /obs for messages (\d+)-(\d+)/;

/**
 * The message seqs each observation of a scope names (`obs for messages a-b`, as the tests'
 * observers write it), checked against its stored source range; in observation order.
 */
export function coveredSeqs(rows: RangeRows, memoryId: string): number[] {
  const covered: number[] = [];
  for (const observation of rows.observations.filter((row) => row.memory_id === memoryId)) {
    const match = RANGE.exec(observation.content);
    if (!match) throw new Error(`observation ${observation.seq} names no range: ${observation.content}`);
    const start = Number(match[1]);
    const end = Number(match[2]);
    if (start !== observation.source_start_seq || end !== observation.source_end_seq) {
      throw new Error(
        `observation ${observation.seq} says ${start}-${end} but its source range is ` +
          `${observation.source_start_seq}-${observation.source_end_seq}`,
      );
    }
    for (let seq = start; seq <= end; seq++) covered.push(seq);
  }
  return covered;
}

/** 1..n. */
export function range(n: number): number[] {
  return Array.from({ length: n }, (_, index) => index + 1);
}
