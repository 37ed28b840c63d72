/**
 * Per-tenant limits under a flood (issue 13): one tenant floods the server with writes and
 * runs as fast as it can while another sends a steady, paced mix of reads and writes. The
 * figure is the calm tenant's latency alone and during the flood, side by side with the
 * flooder's, and how much of the flood the limits refused with 429.
 *
 * The harness runs in a child process with the default limits and two API keys (one per
 * tenant) and instant in-process models; this process generates both tenants' load.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config/load-config.js';
import type { LanguageModel } from '../src/llm/language-model.js';
import { createHarness } from '../src/server/create-harness.js';
import { startServer } from '../src/server/serve.js';
import { forkBenchChild } from './child-process.js';
import { percentile, verdict } from './measure.js';

const SERVER_FLAG = '--bench-tenant-limits-server';
const PHASE_MS = 5_000;
const CALM_INTERVAL_MS = 20;
const FLOOD_CONCURRENCY = 32;
const KEYS = { flood: 'bench-flood-key', calm: 'bench-calm-key' } as const;
// The bound this figure is held to on the 2-CPU bench VM (shared with the load generator).
const CALM_P99_BOUND_MS = 100;

type ChildMessage = { type: 'ready'; url: string };

/** What one tenant's requests came to. */
interface Traffic {
  readonly latencies: number[];
  readonly statuses: Map<number, number>;
}

function record(traffic: Traffic, status: number, ms: number): void {
  traffic.latencies.push(ms);
  traffic.statuses.set(status, (traffic.statuses.get(status) ?? 0) + 1);
}

async function timed(traffic: Traffic, send: () => Promise<Response>): Promise<void> {
  const start = performance.now();
  let status = 0;
  try {
    const response = await send();
    await response.arrayBuffer();
    status = response.status;
  } catch {
    status = -1;
  }
  record(traffic, status, performance.now() - start);
}

/** The calm tenant: a read or a write every 20 ms (25 writes per second, within its 50), for `ms`. */
async function calm(url: string, ms: number): Promise<Traffic> {
  const traffic: Traffic = { latencies: [], statuses: new Map() };
  const headers = { authorization: `Bearer ${KEYS.calm}`, 'content-type': 'application/json' };
  const base = `${url}/v1/memory/calm/conv/agent`;
  const end = performance.now() + ms;
  for (let index = 0; performance.now() < end; index++) {
    const tick = new Promise((resolve) => setTimeout(resolve, CALM_INTERVAL_MS));
    await timed(traffic, () =>
      index % 2 === 0
        ? fetch(`${base}/working`, { headers })
        : fetch(`${base}/working/k${index % 20}`, {
            method: 'PUT',
            headers,
            body: JSON.stringify({ value: { index } }),
          }),
    );
    await tick;
  }
  return traffic;
}

/** The flooding tenant: 32 loops of writes (and a run now and then) without pause, until stopped. */
function flood(url: string): { stop(): Promise<Traffic> } {
  const traffic: Traffic = { latencies: [], statuses: new Map() };
  const headers = { authorization: `Bearer ${KEYS.flood}`, 'content-type': 'application/json' };
  let stopped = false;
  const loop = async (worker: number): Promise<void> => {
    for (let index = 0; !stopped; index++) {
      await timed(traffic, () =>
        index % 10 === 0
          ? fetch(`${url}/v1/runs`, {
              method: 'POST',
              headers,
              body: JSON.stringify({ prompt: `flood ${worker}-${index}`, conversation_id: `flood-${worker}` }),
            })
          : fetch(`${url}/v1/memory/flood/conv-${worker}/agent/working/k${index % 50}`, {
              method: 'PUT',
              headers,
              body: JSON.stringify({ value: index }),
            }),
      );
    }
  };
  const loops = Array.from({ length: FLOOD_CONCURRENCY }, (_, worker) => loop(worker));
  return {
    async stop() {
      stopped = true;
      await Promise.all(loops);
      return traffic;
    },
  };
}

function row(name: string, traffic: Traffic, seconds: number): string {
  const sorted = [...traffic.latencies].sort((a, b) => a - b);
  const ok = [...traffic.statuses]
    .filter(([status]) => status >= 200 && status < 300)
    .reduce((sum, [, count]) => sum + count, 0);
  const refused = traffic.statuses.get(429) ?? 0;
  const other = sorted.length - ok - refused;
  const ms = (value: number) => `${value.toFixed(1).padStart(7)} ms`;
  return [
    name.padEnd(34),
    `${Math.round(sorted.length / seconds)
      .toLocaleString('en')
      .padStart(6)} req/s`,
    `2xx ${String(ok).padStart(6)}`,
    `429 ${String(refused).padStart(6)}`,
    `other ${String(other).padStart(3)}`,
    `p50 ${ms(percentile(sorted, 0.5))}`,
    `p90 ${ms(percentile(sorted, 0.9))}`,
    `p99 ${ms(percentile(sorted, 0.99))}`,
    `max ${ms(sorted.at(-1) ?? 0)}`,
  ].join('  ');
}

/** Prints the calm tenant's latency alone and during the other tenant's flood, and the flood's. */
export async function benchTenantLimits(): Promise<void> {
  const [load1] = loadavg();
  console.log(
    `\n## Per-tenant limits: one tenant floods (${FLOOD_CONCURRENCY} loops of writes and runs, no pause), ` +
      `another sends a read or a write every ${CALM_INTERVAL_MS} ms`,
  );
  console.log(
    `   default limits (50 writes/s, 16 runs, 32 streams per API key); harness in a child process with ` +
      `instant models; ${availableParallelism()} CPUs, load average ${load1?.toFixed(2) ?? '?'}`,
  );
  const child = forkBenchChild<ChildMessage>(fileURLToPath(import.meta.url), SERVER_FLAG);
  try {
    const { url } = await child.receive('ready');
    await calm(url, 1_000);
    const alone = await calm(url, PHASE_MS);
    const flooding = flood(url);
    const during = await calm(url, PHASE_MS);
    const flooded = await flooding.stop();
    const seconds = PHASE_MS / 1000;
    console.log(row('calm tenant, alone', alone, seconds));
    console.log(row('calm tenant, while the other floods', during, seconds));
    console.log(row('flooding tenant', flooded, seconds));
    const sortedAlone = [...alone.latencies].sort((a, b) => a - b);
    const sortedDuring = [...during.latencies].sort((a, b) => a - b);
    const p99Alone = percentile(sortedAlone, 0.99);
    const p99During = percentile(sortedDuring, 0.99);
    const calmRefused = during.statuses.get(429) ?? 0;
    const medianRatio = percentile(sortedDuring, 0.5) / percentile(sortedAlone, 0.5);
    console.log(
      `${'calm during the flood / alone'.padEnd(34)}  median ×${medianRatio.toFixed(2)}, p99 ` +
        `×${(p99During / p99Alone).toFixed(2)} (+${(p99During - p99Alone).toFixed(1)} ms), calm requests ` +
        `refused: ${calmRefused}   bound: none refused, p99 ≤ ${CALM_P99_BOUND_MS} ms  ` +
        `${verdict(p99During <= CALM_P99_BOUND_MS && calmRefused === 0)}`,
    );
  } finally {
    await child.close();
  }
}

// ---------------------------------------------------------------------------------------------
// The child process: the harness with two API keys, default limits and instant models

function instantModel(text: string): LanguageModel {
  return {
    specificationVersion: 'v1',
    provider: 'bench',
    modelId: 'instant',
    doGenerate: async () => ({
      text,
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 10, outputTokens: 5 },
    }),
  };
}

async function serveWithLimits(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'hm-bench-limits-'));
  const env = { HARNESS_WORKSPACE: join(root, 'workspace'), HARNESS_API_KEYS: `${KEYS.flood}:flood,${KEYS.calm}:calm` };
  const harness = await createHarness({
    config: loadConfig({ env, cwd: root, homeDir: join(root, 'home') }),
    env,
    agentModel: instantModel('Done.'),
    memoryModel: instantModel('IMPORTANCE:0.5\nnoted'),
  });
  const server = await startServer(harness, { port: 0 });
  process.on('message', (message) => {
    if (message !== 'close') return;
    server
      .close()
      .then(() => rmSync(root, { recursive: true, force: true }))
      .finally(() => process.disconnect());
  });
  process.send?.({ type: 'ready', url: server.url });
}

if (process.argv.includes(SERVER_FLAG) && process.send) {
  serveWithLimits().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
