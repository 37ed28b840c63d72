/** Timing helpers for `npm run bench`: medians and percentiles over repeated runs. */
export interface Measurement {
  readonly name: string;
  readonly samples: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  readonly meanMs: number;
}

/** Runs `work` `warmup` times untimed, then `samples` times timed, one sample per call. */
export async function measure(name: string, work: () => unknown, options: { samples?: number; warmup?: number } = {}): Promise<Measurement> {
  const samples = options.samples ?? 200;
  for (let index = 0; index < (options.warmup ?? 20); index++) await work();
  const times: number[] = [];
  for (let index = 0; index < samples; index++) {
    const start = process.hrtime.bigint();
    await work();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return {
    name,
    samples,
    medianMs: percentile(times, 0.5),
    p99Ms: percentile(times, 0.99),
    meanMs: times.reduce((sum, value) => sum + value, 0) / times.length,
  };
}

/** Operations per second of `work` run `count` times back to back. */
export async function throughput(work: (index: number) => unknown, count: number): Promise<number> {
  const start = process.hrtime.bigint();
  for (let index = 0; index < count; index++) await work(index);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return count / seconds;
}

function percentile(sorted: readonly number[], fraction: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[index] ?? 0;
}

/** Prints a table row for a measurement. */
export function report(measurement: Measurement, target?: string): void {
  const columns = [
    measurement.name.padEnd(58),
    `median ${measurement.medianMs.toFixed(3).padStart(8)} ms`,
    `p99 ${measurement.p99Ms.toFixed(3).padStart(8)} ms`,
    target ? `target ${target}` : '',
  ];
  console.log(columns.join('  '));
}
