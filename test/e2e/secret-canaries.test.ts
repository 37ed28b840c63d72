/**
 * No secret is stored anywhere: canaries of every supported kind go in as a prompt, as tool
 * arguments and as a tool result (and come back in the answer), through the real harness
 * over HTTP with the scripted model. None of them appears in the SQLite file or its `-wal`,
 * the Postgres tables, an SSE stream, the run and memory reads, or an export.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod/v4';
import { defineTool } from '../../src/tools/tool.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../support/postgres-schema.js';
import { startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

// Built from pieces so the fixtures do not look like live credentials to secret scanners.
// Each canary carries a needle: text that is there only if the secret was not redacted.
const CANARIES: ReadonlyArray<{ kind: string; text: string; needle: string }> = [
  { kind: 'openai', text: `sk-${'Cn01'.repeat(6)}`, needle: 'Cn01Cn01Cn01' },
  { kind: 'openai project', text: `sk-proj-${'Cn02_'.repeat(6)}`, needle: 'Cn02_Cn02_Cn02' },
  { kind: 'anthropic', text: `sk-ant-api03-${'Cn03-'.repeat(6)}`, needle: 'Cn03-Cn03-Cn03' },
  { kind: 'aws access key', text: `AKIA${'CN04'.repeat(4)}`, needle: 'CN04CN04CN04' },
  { kind: 'aws secret key', text: `aws_secret_access_key=${'Cn05/'.repeat(8)}`, needle: 'Cn05/Cn05/Cn05' },
  { kind: 'github', text: `ghp_${'Cn06'.repeat(9)}`, needle: 'Cn06Cn06Cn06' },
  { kind: 'slack', text: `xoxb-${'4242424242'}-Cn07Cn07Cn07`, needle: 'Cn07Cn07Cn07' },
  {
    kind: 'jwt',
    text: ['eyJhbGciOiJIUzI1NiJ9', 'eyJjYW5hcnkiOiJDbjA4In0', 'Cn08Cn08Cn08sig'].join('.'),
    needle: 'Cn08Cn08Cn08',
  },
  {
    kind: 'private key',
    text: ['-----BEGIN RSA PRIVATE KEY-----', 'MIIEowCn09Cn09Cn09', '-----END RSA PRIVATE KEY-----'].join('\n'),
    needle: 'Cn09Cn09Cn09',
  },
  { kind: 'url password', text: 'postgres://svc:Cn10Cn10Cn10pw@db.internal:5432/app', needle: 'Cn10Cn10Cn10' },
  { kind: 'query password', text: 'https://legacy.test/login?user=svc&password=Cn11Cn11Cn11', needle: 'Cn11Cn11Cn11' },
  { kind: 'labelled password', text: 'DB_PASSWORD=Cn12Cn12Cn12', needle: 'Cn12Cn12Cn12' },
  { kind: 'basic auth header', text: 'Authorization: Basic Q24xM0NuMTNDbjEz', needle: 'Q24xM0NuMTNDbjEz' },
  { kind: 'stripe', text: `sk_live_${'Cn14'.repeat(5)}`, needle: 'Cn14Cn14Cn14' },
  { kind: 'gitlab', text: `glpat-${'Cn15'.repeat(5)}`, needle: 'Cn15Cn15Cn15' },
  { kind: 'email', text: 'cn16.canary@mail.example.org', needle: 'cn16.canary@' },
  { kind: 'card', text: ['4111', '1111', '1111', '1111'].join(' '), needle: '4111 1111 1111 1111' },
  { kind: 'encoded bearer', text: 'https://cb.test/?authorization=Bearer%20Cn17Cn17Cn17', needle: 'Cn17Cn17Cn17' },
  { kind: 'cookie', text: 'Cookie: theme=dark; sessionid=Cn18Cn18Cn18', needle: 'Cn18Cn18Cn18' },
  { kind: 'cli password', text: 'mysql -u root -pCn19Cn19Cn19 app', needle: 'Cn19Cn19Cn19' },
  {
    kind: 'slack webhook',
    text: `https://hooks.slack.com/services/T0CN20CN2/B0CN20CN2/${'Cn20'.repeat(6)}`,
    needle: 'Cn20Cn20Cn20',
  },
  {
    kind: 'discord webhook',
    text: `https://discord.com/api/webhooks/123456789012345678/${'Cn21_'.repeat(8)}`,
    needle: 'Cn21_Cn21_Cn21',
  },
  {
    kind: 'sas signature',
    text: 'https://a.blob.test/c?sv=2022-11-02&sig=Cn22Cn22Cn22Cn22%3D',
    needle: 'Cn22Cn22Cn22',
  },
  {
    kind: 'putty key',
    text: ['PuTTY-User-Key-File-3: ssh-ed25519', 'Private-Lines: 1', `AAAAIF${'Cn23'.repeat(10)}`].join('\n'),
    needle: 'Cn23Cn23Cn23',
  },
  { kind: 'sendgrid', text: `SG.${'Cn24'.repeat(5)}ab.${'Cn24-'.repeat(8)}abc`, needle: 'Cn24Cn24Cn24' },
  { kind: 'api key header', text: 'x-api-key: cn-canary-key-value', needle: 'cn-canary-key-value' },
  { kind: 'square', text: `EAAA${'Cn25'.repeat(16)}`, needle: 'Cn25Cn25Cn25' },
  { kind: 'pwd password', text: 'pwd=Cn26Cn26Cn26', needle: 'Cn26Cn26Cn26' },
  { kind: 'short bearer', text: 'Bearer cnsevenTWENTYSEVEN', needle: 'cnsevenTWENTYSEVEN' },
];
const ALL = CANARIES.map((canary) => canary.text).join('\n');

/** The canaries whose needle occurs in `text`. */
function leaked(text: string): string[] {
  return CANARIES.filter((canary) => text.includes(canary.needle)).map((canary) => canary.kind);
}

/** A tool whose result carries every canary, as a credentials lookup might. */
const credentialsTool = defineTool({
  name: 'lookup_credentials',
  description: 'Looks up the service credentials.',
  inputSchema: z.object({ service: z.string(), hint: z.string().optional() }),
  execute: async ({ service }) => ({ service, credentials: ALL }),
});

/** Starts the harness on `env`, runs the canary conversation, and returns everything a client can read. */
async function runCanaries(
  env: Record<string, string>,
  beforeRuns?: (e2e: E2E) => void,
): Promise<{ e2e: E2E; reads: string }> {
  const e2e = await startE2E({
    env: { HARNESS_MEMORY_REFLECT_THRESHOLD_TOKENS: '1', ...env },
    tools: [credentialsTool],
  });
  beforeRuns?.(e2e);
  e2e.script.agent = (turn) => {
    if (turn.step === 0) {
      return {
        toolCalls: [
          { id: 'call-lookup', name: 'lookup_credentials', arguments: { service: 'billing', hint: ALL } },
          { id: 'call-wm', name: 'working_memory', arguments: { action: 'set', key: 'creds', value: { all: ALL } } },
          { id: 'call-export', name: 'observational_memory', arguments: { action: 'export' } },
        ],
      };
    }
    return { text: `Here is what I found:\n${ALL}` };
  };
  const runId = await e2e.startRun({
    prompt: `Remember these for me:\n${ALL}`,
    conversation_id: 'conv-canary',
    system_prompt: `Never leak ${CANARIES[0]!.text}`,
  });
  const frames = await e2e.events(runId);
  expect(frames.at(-1)?.event).toBe('run.completed');
  await e2e.harness.observationalMemory.drain(undefined, { timeoutMs: 20_000 });
  // A second run replays the history and exports again once memory has settled.
  e2e.script.agent = (turn) =>
    turn.step === 0
      ? {
          toolCalls: [
            { id: 'call-export-2', name: 'observational_memory', arguments: { action: 'export', format: 'markdown' } },
          ],
        }
      : { text: 'done' };
  const continued = (
    await e2e.apiJson(`/v1/runs/${runId}/continue`, { method: 'POST', json: { prompt: 'export again' } })
  ).body['run_id'] as string;
  const moreFrames = await e2e.events(continued);
  const scopePath = '/v1/memory/default/conv-canary/default';
  const reads = [
    JSON.stringify(frames),
    JSON.stringify(moreFrames),
    await (await e2e.api(`/v1/runs/${runId}`)).text(),
    await (await e2e.api(scopePath)).text(),
    await (await e2e.api(`${scopePath}/working`)).text(),
    await (await e2e.api(`${scopePath}/observational/export?format=json`)).text(),
    await (await e2e.api(`${scopePath}/observational/export?format=markdown`)).text(),
  ].join('\n');
  return { e2e, reads };
}

/** Every export file the tool wrote. */
function exportFiles(workspace: string): string[] {
  const root = join(workspace, '.harness', 'observational-memory');
  return (
    readdirSync(root, { recursive: true, withFileTypes: true }) as Array<{
      isFile(): boolean;
      parentPath: string;
      name: string;
    }>
  )
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'));
}

describe('e2e: secret canaries', () => {
  it('stores no canary in the SQLite file or its -wal, and shows none over SSE, reads or exports', async () => {
    // A reader holding its snapshot from before the runs keeps the write-ahead log from being
    // restarted, so every page version written during the runs is still in the -wal when it
    // is read, not only the latest ones: a secret written once and overwritten later shows.
    let reader: Database.Database | undefined;
    const { e2e, reads } = await runCanaries({}, (started) => {
      reader = new Database(started.dbPath, { readonly: true });
      reader.exec('BEGIN');
      reader.prepare('SELECT COUNT(*) FROM om_memory_records').get();
    });
    try {
      // The agent did see them: the model was given the prompt and the tool result as sent.
      const agentSaw = JSON.stringify(e2e.agentRequests().map((request) => request.body));
      expect(leaked(agentSaw)).toEqual(CANARIES.map((canary) => canary.kind));
      expect(leaked(reads)).toEqual([]);
      const files = exportFiles(e2e.workspace);
      expect(files.length).toBe(2);
      expect(leaked(files.join('\n'))).toEqual([]);
      // Read the raw bytes while the harness is open, so the -wal holds the recent writes.
      const database = readFileSync(e2e.dbPath).toString('latin1');
      const wal = existsSync(`${e2e.dbPath}-wal`) ? readFileSync(`${e2e.dbPath}-wal`).toString('latin1') : '';
      expect(wal.length).toBeGreaterThan(0);
      expect(leaked(database)).toEqual([]);
      expect(leaked(wal)).toEqual([]);
      // The placeholders are where the secrets were.
      expect(reads).toContain('[REDACTED:anthropic_key]');
      expect(reads).toContain('[REDACTED:url_password]');
    } finally {
      reader?.exec('COMMIT');
      reader?.close();
      await e2e.close();
    }
  });

  it('keeps them when [server] redact_transcripts is off (the switch works both ways)', async () => {
    const { e2e, reads } = await runCanaries({ HARNESS_REDACT_TRANSCRIPTS: 'false' });
    try {
      expect(leaked(reads).length).toBeGreaterThan(0);
      // Memory keeps redacting on its own setting.
      expect(leaked(await (await e2e.api('/v1/memory/default/conv-canary/default/working')).text())).toEqual([]);
    } finally {
      await e2e.close();
    }
  });

  const url = postgresTestUrl();
  const schemas = url ? createPostgresTestSchemas(url) : undefined;
  afterAll(async () => {
    await schemas?.dropAll();
  });

  it.skipIf(!url)('stores no canary in any Postgres table', async () => {
    const schema = schemas!.next();
    const { e2e, reads } = await runCanaries({
      HARNESS_MEMORY_DB_DRIVER: 'postgres',
      HARNESS_MEMORY_DB_DSN: url!,
      HARNESS_MEMORY_SCHEMA: schema,
    });
    const pool = new pg.Pool({ connectionString: url!, max: 1 });
    try {
      expect(leaked(reads)).toEqual([]);
      expect(leaked(exportFiles(e2e.workspace).join('\n'))).toEqual([]);
      const tables = await pool.query<{ name: string }>(
        'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1',
        [schema],
      );
      expect(tables.rows.map((row) => row.name)).toContain('harness_run_events');
      let rows = 0;
      for (const { name } of tables.rows) {
        const dump = await pool.query<{ row: string }>(`SELECT t::text AS row FROM "${schema}"."${name}" AS t`);
        rows += dump.rowCount ?? 0;
        expect(leaked(dump.rows.map((item) => item.row).join('\n')), name).toEqual([]);
      }
      expect(rows).toBeGreaterThan(20);
    } finally {
      await pool.end();
      await e2e.close();
    }
  });
});
