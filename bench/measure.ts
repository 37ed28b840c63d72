/** Timing helpers for `npm run bench`: medians and percentiles over repeated runs. */
export interface Measurement {
  readonly name: string;
  readonly samples: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  readonly meanMs: number;
}

/** Options of {@link measure}. */
export interface MeasureOptions {
  samples?: number;
  warmup?: number;
  /** Runs untimed before every call of `work` (warmup included), e.g. to invalidate a cache. */
  before?: () => unknown;
}

/** Runs `work` `warmup` times untimed, then `samples` times timed, one sample per call. */
export async function measure(name: string, work: () => unknown, options: MeasureOptions = {}): Promise<Measurement> {
  const samples = options.samples ?? 200;
  for (let index = 0; index < (options.warmup ?? 20); index++) {
    await options.before?.();
    await work();
  }
  const times: number[] = [];
  for (let index = 0; index < samples; index++) {
    await options.before?.();
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

/** What {@link throughputWithin} measured. */
export interface Rate {
  readonly name: string;
  readonly count: number;
  readonly seconds: number;
  readonly opsPerSecond: number;
}

/**
 * Operations per second of `work` run back to back, `maxCount` times or until `maxSeconds`
 * have passed (whichever comes first; at least `minCount` times).
 */
export async function throughputWithin(
  name: string,
  work: (index: number) => unknown,
  options: { maxCount: number; maxSeconds: number; minCount?: number },
): Promise<Rate> {
  const start = process.hrtime.bigint();
  const limit = start + BigInt(Math.round(options.maxSeconds * 1e9));
  const minCount = options.minCount ?? 1;
  let count = 0;
  while (count < options.maxCount && (count < minCount || process.hrtime.bigint() < limit)) await work(count++);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { name, count, seconds, opsPerSecond: count / seconds };
}

/** A {@link Rate} measured in consecutive windows, with each window's rate. */
export interface WindowedRate extends Rate {
  readonly windowRates: readonly number[];
}

/**
 * Operations per second of `work` run back to back `windows × perWindow` times: the
 * overall rate, and the rate of each window of `perWindow` (to show how steady it was).
 */
export async function throughputInWindows(
  name: string,
  work: (index: number) => unknown,
  options: { windows: number; perWindow: number },
): Promise<WindowedRate> {
  const windowRates: number[] = [];
  let index = 0;
  const start = process.hrtime.bigint();
  for (let window = 0; window < options.windows; window++) {
    const windowStart = process.hrtime.bigint();
    for (let step = 0; step < options.perWindow; step++) await work(index++);
    windowRates.push(options.perWindow / (Number(process.hrtime.bigint() - windowStart) / 1e9));
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { name, count: index, seconds, opsPerSecond: index / seconds, windowRates };
}

/** `ok` when `pass`, `MISSED` otherwise: printed next to each target. */
export function verdict(pass: boolean): string {
  return pass ? 'ok' : 'MISSED';
}

/** The value at `fraction` (0.5 for the median) of `sorted`, ascending. */
export function percentile(sorted: readonly number[], fraction: number): number {
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

/** Prints a table row for a throughput. */
export function reportRate(rate: Rate, target?: string): void {
  const columns = [
    rate.name.padEnd(58),
    `${Math.round(rate.opsPerSecond).toLocaleString('en').padStart(10)} ops/s`,
    `(${rate.count.toLocaleString('en')} ops in ${rate.seconds.toFixed(2)} s)`.padEnd(26),
    target ? `target ${target}` : '',
  ];
  console.log(columns.join('  '));
}
