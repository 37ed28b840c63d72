import pg from 'pg';
import { PG_TYPES } from '../../src/storage/postgres/postgres-connection.js';
const url = 'postgres://postgres@127.0.0.1:5432/test'; const schema = `hm_tmpx_${process.pid}`;
const c = new pg.Client(url); await c.connect();
try {
await c.query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".m (memory_id text NOT NULL, position bigint NOT NULL, message_id text, run_id text, role text, content text, name text, tool_call_id text, tool_calls_json json, token_count bigint NOT NULL, PRIMARY KEY (memory_id, position))`);
await c.query(`INSERT INTO "${schema}".m SELECT 'mem', g, 'm'||g, 'r', 'user', repeat('we talked about the deploy window ', 1 + g % 5), null, null, null, 40 FROM generate_series(1, 10000) g`);
await c.query(`ANALYZE "${schema}".m`);
const sql = `SELECT position, message_id, run_id, role, content, name, tool_call_id, tool_calls_json, token_count FROM "${schema}".m WHERE memory_id = $1 AND position < $2 ORDER BY position DESC LIMIT $3`;
console.log((await c.query(`EXPLAIN ANALYZE ${sql.replace('$1', "'mem'").replace('$2', '9007199254740991').replace('$3', '225')}`)).rows.map((r: any) => r['QUERY PLAN']).join('\n'));
const t = async (name: string, f: () => unknown, n = 300) => { for (let i = 0; i < 30; i++) await f(); const times: number[] = []; for (let i = 0; i < n; i++) { const s = performance.now(); await f(); times.push(performance.now() - s); } times.sort((a, b) => a - b); console.log(name, 'median', times[n >> 1]!.toFixed(3), 'p99', times[Math.floor(n * 0.99)]!.toFixed(3)); };
await t('plain', () => c.query(sql, ['mem', Number.MAX_SAFE_INTEGER, 225]));
await t('types', () => c.query({ text: sql, values: ['mem', Number.MAX_SAFE_INTEGER, 225], types: PG_TYPES }));
await t('named', () => c.query({ name: 'q1', text: sql, values: ['mem', Number.MAX_SAFE_INTEGER, 225], types: PG_TYPES }));
await t('named rowMode array', () => c.query({ name: 'q2', text: sql, values: ['mem', Number.MAX_SAFE_INTEGER, 225], rowMode: 'array' }));
} finally { await c.query(`DROP SCHEMA "${schema}" CASCADE`); await c.end(); }
