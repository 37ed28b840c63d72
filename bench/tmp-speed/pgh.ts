import { createPostgresRunStore } from '../../src/storage/postgres/index.js';
import { RUNE_TOKEN_ESTIMATOR } from '../../src/core/token-estimator.js';
import pg from 'pg';
const url = 'postgres://postgres@127.0.0.1:5432/test'; const schema = `hm_tmp_${process.pid}`;
const rs = await createPostgresRunStore({ connectionString: url, schema, max: 4 });
try {
const id = 'mem';
for (let f = 0; f < 10000; f += 500) await rs.appendMessages(id, Array.from({ length: 500 }, (_, o) => { const i = f + o; const content = `Message ${i}: ${'we talked about the deploy window and the reviewer again '.repeat(1 + (i % 5))}`.slice(0, 80 + (i % 7) * 40); return { messageId: `m${i}`, runId: 'r', role: i % 2 ? 'assistant' : 'user', content, tokenCount: RUNE_TOKEN_ESTIMATOR.estimate(content) } as const; }));
const t = async (name: string, f: () => unknown, n = 300) => { for (let i = 0; i < 50; i++) await f(); const times: number[] = []; for (let i = 0; i < n; i++) { const s = performance.now(); await f(); times.push(performance.now() - s); } times.sort((a, b) => a - b); console.log(name, 'median', times[n >> 1]!.toFixed(3), 'p99', times[Math.floor(n * 0.99)]!.toFixed(3)); };
await t('pg recentMessages 8000', () => rs.recentMessages(id, 8000));
await t('pg generation', () => rs.conversationGeneration(id));
} finally { await rs.dispose(); const c = new pg.Client(url); await c.connect(); await c.query(`DROP SCHEMA "${schema}" CASCADE`); await c.end(); }
