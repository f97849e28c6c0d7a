import { errorMessage, hasCode } from '../errors';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Pool, PoolClient } from 'pg';
import type { Logger } from '../observability/logger';
import { PACKAGE_ROOT } from '../runtime/package-root';
import { RelayError } from '../errors/relay-error';

export const SQL_DIR = path.join(PACKAGE_ROOT, 'sql');
/** Serialises migrations of every replica that starts at once (any constant; documented in README). */
export const MIGRATION_LOCK_KEY = 7_346_201_001;

export interface Migration {
  version: number;
  name: string;
  file: string;
}

export class MigrationError extends RelayError {
  readonly code = 'RELAY_MIGRATION_FAILED';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** `sql/NNNN_name.sql` files in version order; duplicate versions are a packaging error. */
export function listMigrations(dir = SQL_DIR): Migration[] {
  const out: Migration[] = [];
  for (const f of fs.readdirSync(dir)) {
    const m = /^(\d{4})_([\w-]+)\.sql$/.exec(f);
    if (!m) continue;
    out.push({ version: Number(m[1]), name: m[2], file: path.join(dir, f) });
  }
  out.sort((a, b) => a.version - b.version);
  for (let i = 1; i < out.length; i++) {
    if (out[i].version === out[i - 1].version)
      throw new MigrationError(`two migrations share version ${out[i].version}`);
  }
  return out;
}

const BOOTSTRAP = `
  create schema if not exists relay;
  create table if not exists relay.schema_migrations (
    version    integer primary key,
    name       text not null,
    applied_at timestamptz not null default now()
  )`;

/** A repeatable file: `sql/functions/<name>.sql`, one function each (CREATE OR REPLACE). */
export interface RepeatableFile {
  name: string;
  file: string;
  sha256: string;
}

/** Where the repeatable files of a migrations folder live. */
export const FUNCTIONS_SUBDIR = 'functions';

/** `sql/functions/*.sql` in name order, with the sha256 of each file's bytes. None when the folder is absent. */
export function listRepeatables(dir = SQL_DIR): RepeatableFile[] {
  const fdir = path.join(dir, FUNCTIONS_SUBDIR);
  if (!fs.existsSync(fdir)) return [];
  return fs
    .readdirSync(fdir)
    .filter((f) => /^[\w-]+\.sql$/.test(f))
    .sort()
    .map((name) => {
      const file = path.join(fdir, name);
      return { name, file, sha256: crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex') };
    });
}

/**
 * Applies every migration not yet recorded, each in its own transaction under a transaction-level
 * advisory lock, writing the version row in the same transaction. Concurrent callers queue on the
 * lock and then find the work done, so re-running is a no-op. Returns the versions applied here.
 *
 * Then the repeatable files (sql/functions/), in name order, each in its own transaction under the
 * same lock: a file is run only when its sha256 differs from the one recorded in
 * relay.schema_repeatables (migration 0016), which is updated in the same transaction. They run
 * after every numbered migration, so a numbered migration sees the functions as the numbered files
 * before it left them (each numbered file that calls a function still creates it itself), and the
 * repeatable files then bring every function to its latest definition.
 */
export async function migrate(pool: Pool, opts: { dir?: string; logger?: Logger } = {}): Promise<number[]> {
  const migrations = listMigrations(opts.dir);
  const applied: number[] = [];
  const client = await pool.connect();
  try {
    for (const m of migrations) {
      await client.query('begin');
      try {
        await client.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
        await client.query(BOOTSTRAP);
        const { rowCount } = await client.query('select 1 from relay.schema_migrations where version = $1', [
          m.version,
        ]);
        if (rowCount) {
          await client.query('commit');
          continue;
        }
        await client.query(fs.readFileSync(m.file, 'utf8'));
        await client.query('insert into relay.schema_migrations (version, name) values ($1, $2)', [m.version, m.name]);
        await client.query('commit');
        applied.push(m.version);
        opts.logger?.info({ version: m.version, name: m.name }, 'migration applied');
      } catch (err) {
        await client.query('rollback').catch(() => undefined);
        throw new MigrationError(
          `migration ${String(m.version).padStart(4, '0')}_${m.name} failed: ${errorMessage(err) ?? String(err)}`,
          { cause: err },
        );
      }
    }
    await applyRepeatables(client, listRepeatables(opts.dir), opts.logger);
  } finally {
    client.release();
  }
  return applied;
}

async function applyRepeatables(client: PoolClient, files: RepeatableFile[], logger?: Logger): Promise<void> {
  for (const r of files) {
    await client.query('begin');
    try {
      await client.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      const { rows } = await client.query<{ sha256: string }>(
        'select sha256 from relay.schema_repeatables where name = $1',
        [r.name],
      );
      if (rows[0]?.sha256 === r.sha256) {
        await client.query('commit');
        continue;
      }
      await client.query(fs.readFileSync(r.file, 'utf8'));
      await client.query(
        `insert into relay.schema_repeatables (name, sha256) values ($1, $2)
         on conflict (name) do update set sha256 = excluded.sha256, applied_at = now()`,
        [r.name, r.sha256],
      );
      await client.query('commit');
      logger?.info({ file: `${FUNCTIONS_SUBDIR}/${r.name}`, sha256: r.sha256.slice(0, 12) }, 'repeatable SQL applied');
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw new MigrationError(`repeatable ${FUNCTIONS_SUBDIR}/${r.name} failed: ${errorMessage(err) ?? String(err)}`, {
        cause: err,
      });
    }
  }
}

export interface MigrationStatus {
  current: boolean;
  applied: number[];
  pending: number[];
}

/** Which migrations the database lacks (readiness fails while any is pending). */
export async function migrationStatus(pool: Pool, dir?: string): Promise<MigrationStatus> {
  const all = listMigrations(dir).map((m) => m.version);
  let applied: number[] = [];
  try {
    const { rows } = await pool.query<{ version: number | string }>(
      'select version from relay.schema_migrations order by version',
    );
    applied = rows.map((r) => Number(r.version));
  } catch (err) {
    if (!hasCode(err, '42P01')) throw err; // undefined_table: nothing applied yet
  }
  const pending = all.filter((v) => !applied.includes(v));
  return { current: pending.length === 0, applied, pending };
}
