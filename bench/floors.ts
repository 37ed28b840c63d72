/**
 * What the machine itself allows, measured next to the issue-16 figures so that a missed
 * target can be read against it: a one-row SQLite commit, and one of a row in each of two
 * tables (the pages a working-memory set writes: its entry, and its scope's version and
 * usage, so what a set cannot beat), and a Postgres round trip and durable commit (what a
 * validated pre-turn read and an observe cannot beat). Nothing of harness-memory runs here:
 * bare better-sqlite3 and pg.
 * @module
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { measure, report, reportRate, throughputWithin } from './measure.js';

/** The floors of one backend, as the JSON line prints them. */
export interface Floors {
  /** Sequential one-row upserts, each its own `BEGIN IMMEDIATE` … `COMMIT` (SQLite) or autocommit (Postgres). */
  commit_per_s: number;
  /**
   * SQLite only: sequential commits of an upsert in each of two tables (a rowid table with
   * a text key, and a `WITHOUT ROWID` one), as a working-memory set writes its entry and its
   * scope's version row.
   */
  two_table_commit_per_s?: number;
  /** Postgres only: `SELECT $1` on a pool, one at a time. */
  round_trip_p99_ms?: number;
}

const RATE = { maxSeconds: 1, minCount: 200, maxCount: 200_000 };

/** A bare SQLite file in `directory`, WAL and `synchronous=NORMAL` as the stores set them. */
export async function sqliteFloors(directory: string): Promise<Floors> {
  const db = new Database(join(directory, 'floor.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE floor (k TEXT PRIMARY KEY, v TEXT NOT NULL)');
    db.exec('CREATE TABLE floor_usage (k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID');
    const begin = db.prepare('BEGIN IMMEDIATE');
    const commit = db.prepare('COMMIT');
    const upsert = db.prepare('INSERT INTO floor VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v');
    const upsertUsage = db.prepare(
      'INSERT INTO floor_usage VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v',
    );
    const rate = await throughputWithin(
      'floor, sqlite: one-row commit (bare better-sqlite3)',
      (index) => {
        begin.run();
        upsert.run(`k${index % 100}`, `value ${index}`);
        commit.run();
      },
      RATE,
    );
    reportRate(rate);
    const twoTables = await throughputWithin(
      'floor, sqlite: a row in each of two tables (a wm set)',
      (index) => {
        begin.run();
        upsert.run(`k${index % 100}`, `value ${index}`);
        upsertUsage.run('scope', index);
        commit.run();
      },
      RATE,
    );
    reportRate(twoTables);
    return {
      commit_per_s: Math.round(rate.opsPerSecond),
      two_table_commit_per_s: Math.round(twoTables.opsPerSecond),
    };
  } finally {
    db.close();
  }
}

/** A bare pg pool on `url`, in `schema` (which the caller drops). */
export async function postgresFloors(url: string, schema: string): Promise<Floors> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await pool.query(`CREATE TABLE "${schema}".floor (k text PRIMARY KEY, v text NOT NULL)`);
    const trip = await measure(
      'floor, postgres: round trip (SELECT $1, bare pg pool)',
      () => pool.query({ name: 'floor_trip', text: 'SELECT $1::int', values: [1] }),
      { samples: 2_000, warmup: 100 },
    );
    report(trip);
    const text = `INSERT INTO "${schema}".floor VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v`;
    const rate = await throughputWithin(
      'floor, postgres: one-row durable commit (autocommit)',
      (index) => pool.query({ name: 'floor_commit', text, values: [`k${index % 100}`, `value ${index}`] }),
      RATE,
    );
    reportRate(rate);
    return { commit_per_s: Math.round(rate.opsPerSecond), round_trip_p99_ms: Math.round(trip.p99Ms * 1000) / 1000 };
  } finally {
    await pool.end();
  }
}
