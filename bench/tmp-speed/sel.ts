import { selectObservationIndices } from '../../src/core/observation-snippet.js';
import { RUNE_TOKEN_ESTIMATOR } from '../../src/core/token-estimator.js';
import { syntheticObservations } from '../snippet.js';
const all = syntheticObservations(10_000);
const log = all.slice(0, 9000);
const superseded = new Map<number, number>();
let s0 = performance.now();
selectObservationIndices(log, superseded, 850, RUNE_TOKEN_ESTIMATOR);
console.log('first call', (performance.now() - s0).toFixed(2));
for (let round = 0; round < 3; round++) {
let t = 0; let n = 0; const times: number[] = [];
for (let i = 9000 + round * 300; i < 9300 + round * 300; i++) { log.push(all[i]!); const s = performance.now(); const r = selectObservationIndices(log, superseded, 850, RUNE_TOKEN_ESTIMATOR); const d = performance.now() - s; times.push(d); t += d; n++; if (i === 9001) console.log('chosen', r.length); }
times.sort((a, b) => a - b);
console.log('after append per call ms mean', (t / n).toFixed(4), 'median', times[n >> 1]!.toFixed(4), 'p99', times[Math.floor(n * 0.99)]!.toFixed(4));
}
