import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
const dir = mkdtempSync(join(tmpdir(), 'wm-'));
const store = createSqliteStore({ path: join(dir, 'a.db') });
const wm = createWorkingMemory({ store });
const input = { tenantId: 'bench', conversationId: 'c' };
const key = (i: number) => `note-${String(i % 100).padStart(3, '0')}`;
for (let i = 0; i < 100; i++) await wm.set(input, key(i), { note: 'x'.repeat(150), step: i });
const which = process.argv[2] ?? 'both';
if (which !== 'get') { const s = performance.now(); const N = 60000; for (let i = 0; i < N; i++) await wm.set(input, key(i), { note: 'replaced value of about the same size', turn: i }); console.log('set/s', Math.round(N / ((performance.now() - s) / 1000))); }
if (which !== 'set') { const s = performance.now(); const N = 300000; for (let i = 0; i < N; i++) await wm.get(input, key(i)); console.log('get/s', Math.round(N / ((performance.now() - s) / 1000))); }
await store.dispose();
import BetterSqlite3 from 'better-sqlite3';
const db = new BetterSqlite3(join(dir, 'a.db'));
const st = db.prepare('SELECT * FROM working_memory_entries WHERE memory_id = ? AND entry_key = ?');
const mid = '5:bench/1:c/7:default';
console.log(st.get(mid, key(3)) ? 'found' : 'missing');
{ const s = performance.now(); const N = 300000; for (let i = 0; i < N; i++) st.get(mid, key(i)); console.log('raw get/s', Math.round(N / ((performance.now() - s) / 1000))); }
const st2 = db.prepare('SELECT entry_json FROM working_memory_entries WHERE memory_id = ? AND entry_key = ?').pluck();
{ const s = performance.now(); const N = 300000; for (let i = 0; i < N; i++) st2.get(mid, key(i)); console.log('raw pluck get/s', Math.round(N / ((performance.now() - s) / 1000))); }
console.log(db.prepare("select sql from sqlite_master where name='working_memory_entries'").pluck().get());
const dv = db.prepare('PRAGMA data_version').pluck();
{ const s = performance.now(); const N = 300000; for (let i = 0; i < N; i++) dv.get(); console.log('data_version/s', Math.round(N / ((performance.now() - s) / 1000))); }
const one = db.prepare('SELECT 1').pluck();
{ const s = performance.now(); const N = 300000; for (let i = 0; i < N; i++) one.get(); console.log('select 1/s', Math.round(N / ((performance.now() - s) / 1000))); }
{ const s = performance.now(); const N = 300000; for (let i = 0; i < N; i++) await Promise.resolve(1); console.log('await/s', Math.round(N / ((performance.now() - s) / 1000))); }
