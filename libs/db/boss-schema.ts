/**
 * pg-boss's schema, kept in step with the code: the version guard every process runs at start, and
 * the one-time move of an existing installation from pg-boss's default schema `pgboss` to ours.
 */
import type { Pool, PoolClient } from 'pg';
import type { Logger } from '../observability/logger';
import { BOSS_SCHEMA, createBoss, LEGACY_BOSS_SCHEMA, QUEUES } from './boss';
import type { DbTimeouts } from './pool';
import { RelayError } from '../errors/relay-error';

/** The pg-boss release tg-relay is built and tested against (package.json pins it exactly). */
export const BOSS_PACKAGE_VERSION = '10.4.2';
/** The schema version pg-boss 10.4.2 records in `<schema>.version` (its version.json). */
export const BOSS_SCHEMA_VERSION = 24;

/** Exit code of a process that refuses to run on a pg-boss schema it was not built for (EX_DATAERR). */
export const EXIT_BOSS_SCHEMA_MISMATCH = 65;

export class BossSchemaMismatchError extends RelayError {
  readonly code = 'RELAY_BOSS_SCHEMA_MISMATCH';
  readonly exitCode = EXIT_BOSS_SCHEMA_MISMATCH;
  constructor(
    readonly recorded: number | null,
    readonly expected: number,
    detail?: string,
  ) {
    super(
      detail ??
        `pg-boss schema "${BOSS_SCHEMA}" is at version ${recorded ?? 'none (not installed)'} but this tg-relay was built for version ${expected} ` +
          `(pg-boss ${BOSS_PACKAGE_VERSION}): run "tg-relay migrate" with this release${recorded !== null && recorded > expected ? ' — the database was migrated by a newer release; run that release instead' : ''}`,
    );
  }
}

/** The version pg-boss recorded in our schema, or null when it is not installed there. */
export async function bossSchemaVersion(q: Pick<Pool, 'query'>): Promise<number | null> {
  const { rows } = await q.query<{ installed: boolean }>(`select to_regclass($1) is not null as installed`, [
    `${BOSS_SCHEMA}.version`,
  ]);
  if (!rows[0].installed) return null;
  const v = await q.query<{ version: number | string }>(`select version from ${BOSS_SCHEMA}.version`);
  return v.rows.length ? Number(v.rows[0].version) : null;
}

/**
 * Refuses to run (throws BossSchemaMismatchError) unless pg-boss's recorded schema version is the
 * one this build's pg-boss expects, and the installed pg-boss package is the pinned release.
 * Every process but `tg-relay migrate` calls this before using pg-boss (they run it with
 * `migrate: false`, so nothing else would ever change its schema).
 */
export async function assertBossSchemaVersion(
  q: Pick<Pool, 'query'>,
  installedPackage: { version: string; schema: number } = installedBoss(),
): Promise<void> {
  if (installedPackage.version !== BOSS_PACKAGE_VERSION || installedPackage.schema !== BOSS_SCHEMA_VERSION) {
    throw new BossSchemaMismatchError(
      null,
      BOSS_SCHEMA_VERSION,
      `the installed pg-boss is ${installedPackage.version} (schema ${installedPackage.schema}) but this tg-relay was built for pg-boss ${BOSS_PACKAGE_VERSION} (schema ${BOSS_SCHEMA_VERSION}): reinstall the pinned dependencies`,
    );
  }
  const recorded = await bossSchemaVersion(q);
  if (recorded !== BOSS_SCHEMA_VERSION) throw new BossSchemaMismatchError(recorded, BOSS_SCHEMA_VERSION);
}

/** pg-boss's own package and schema version, read from node_modules. */
export function installedBoss(): { version: string; schema: number } {
  /* eslint-disable @typescript-eslint/no-require-imports */
  return {
    version: (require('pg-boss/package.json') as { version: string }).version,
    schema: (require('pg-boss/version.json') as { schema: number }).schema,
  };
}

export type LegacyBossMove = 'none' | 'renamed' | 'copied';

async function tableExists(c: PoolClient, name: string): Promise<boolean> {
  const { rows } = await c.query<{ ok: boolean }>('select to_regclass($1) is not null as ok', [name]);
  return rows[0].ok;
}

/**
 * Step 1 of moving an installation that kept pg-boss in `pgboss` (tg-relay before migration 0011).
 * When `pgboss` holds only tg-relay's queues, the schema is renamed (O(1), every job, archive row
 * and partition moves with it) and pg-boss's PL/pgSQL functions are rewritten: their bodies name
 * the schema as text (create_queue/delete_queue build `pgboss.job` partitions with EXECUTE), so a
 * rename alone would leave them creating partitions in a schema that no longer exists.
 * When `pgboss` is shared with someone else's queues (a bot author's own pg-boss), nothing is
 * renamed: `copyLegacyBossJobs` moves only our queues' rows once pg-boss has created our schema.
 * Runs in its own transaction; callers hold the migration lock.
 */
export async function renameLegacyBossSchema(c: PoolClient, logger?: Logger): Promise<LegacyBossMove> {
  const ours = Object.values(QUEUES) as string[];
  if (!(await tableExists(c, `${LEGACY_BOSS_SCHEMA}.queue`))) return 'none';
  const { rows } = await c.query<{ name: string }>(`select name from ${LEGACY_BOSS_SCHEMA}.queue`);
  const names = rows.map((r) => r.name);
  if (!names.some((n) => ours.includes(n))) return 'none';
  const newExists = (await c.query('select 1 from pg_namespace where nspname = $1', [BOSS_SCHEMA])).rowCount;
  if (newExists || names.some((n) => !ours.includes(n))) return 'copied'; // done by copyLegacyBossJobs after pg-boss starts
  await c.query('begin');
  try {
    await c.query(`alter schema ${LEGACY_BOSS_SCHEMA} rename to ${BOSS_SCHEMA}`);
    const fns = await c.query<{ def: string }>(
      `select p.oid, pg_get_functiondef(p.oid) as def
         from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = $1 and p.prosrc like $2`,
      [BOSS_SCHEMA, `%${LEGACY_BOSS_SCHEMA}.%`],
    );
    for (const f of fns.rows) {
      // pg_get_functiondef already names the function in its new schema; the body still says pgboss.
      await c.query(f.def.replace(new RegExp(`\\b${LEGACY_BOSS_SCHEMA}\\.`, 'g'), `${BOSS_SCHEMA}.`));
    }
    await c.query('commit');
  } catch (err) {
    await c.query('rollback').catch(() => undefined);
    throw err;
  }
  logger?.info({ from: LEGACY_BOSS_SCHEMA, to: BOSS_SCHEMA }, 'pg-boss schema renamed');
  return 'renamed';
}

/**
 * Step 2 for a shared `pgboss`: with our schema created by pg-boss and our queues in it, copy our
 * queues' jobs and archived jobs across and drop them (and the queues) from `pgboss`, in one
 * transaction. Other queues in `pgboss` are not touched. Requires both schemas at the same pg-boss
 * schema version (the rows are copied column for column).
 */
export async function copyLegacyBossJobs(c: PoolClient, logger?: Logger): Promise<number> {
  const ours = Object.values(QUEUES) as string[];
  if (!(await tableExists(c, `${LEGACY_BOSS_SCHEMA}.queue`))) return 0;
  await c.query('begin');
  try {
    const present = (
      await c.query<{ name: string }>(
        `select name from ${LEGACY_BOSS_SCHEMA}.queue where name = any($1::text[]) for update`,
        [ours],
      )
    ).rows.map((r) => r.name);
    if (present.length === 0) {
      await c.query('commit');
      return 0;
    }
    const legacyVersion = Number(
      (await c.query<{ version: number | string }>(`select version from ${LEGACY_BOSS_SCHEMA}.version`)).rows[0]
        ?.version,
    );
    if (legacyVersion !== BOSS_SCHEMA_VERSION) {
      throw new BossSchemaMismatchError(
        legacyVersion,
        BOSS_SCHEMA_VERSION,
        `cannot move tg-relay's jobs out of the shared schema "${LEGACY_BOSS_SCHEMA}": it is at pg-boss schema version ${legacyVersion}, this tg-relay needs ${BOSS_SCHEMA_VERSION}`,
      );
    }
    // column for column; the state enum is a type of each schema, so it goes across as text
    const cols = async (table: string) =>
      (
        await c.query(
          `select string_agg(quote_ident(column_name), ', ' order by ordinal_position) as list,
                  string_agg(case when udt_name = 'job_state' then quote_ident(column_name) || '::text::' || quote_ident($1) || '.job_state'
                                  else quote_ident(column_name) end, ', ' order by ordinal_position) as exprs
             from information_schema.columns where table_schema = $1 and table_name = $2`,
          [BOSS_SCHEMA, table],
        )
      ).rows[0] as { list: string; exprs: string };
    const job = await cols('job');
    const archive = await cols('archive');
    const moved = await c.query(
      `insert into ${BOSS_SCHEMA}.job (${job.list}) select ${job.exprs} from ${LEGACY_BOSS_SCHEMA}.job where name = any($1::text[]) on conflict do nothing`,
      [present],
    );
    await c.query(
      `insert into ${BOSS_SCHEMA}.archive (${archive.list}) select ${archive.exprs} from ${LEGACY_BOSS_SCHEMA}.archive where name = any($1::text[]) on conflict do nothing`,
      [present],
    );
    await c.query(`delete from ${LEGACY_BOSS_SCHEMA}.archive where name = any($1::text[])`, [present]);
    await c.query(`delete from ${LEGACY_BOSS_SCHEMA}.job where name = any($1::text[])`, [present]); // delete_queue's FK is ON DELETE RESTRICT
    for (const name of present) await c.query(`select ${LEGACY_BOSS_SCHEMA}.delete_queue($1)`, [name]);
    await c.query('commit');
    logger?.info(
      { from: LEGACY_BOSS_SCHEMA, to: BOSS_SCHEMA, queues: present, jobs: moved.rowCount },
      "tg-relay's pg-boss jobs moved out of a shared schema",
    );
    return moved.rowCount ?? 0;
  } catch (err) {
    await c.query('rollback').catch(() => undefined);
    throw err;
  }
}

/**
 * The ledger's part of `tg-relay migrate`, run under the caller's migration lock (`lock`) after our
 * SQL migrations: move an existing `pgboss` schema to ours, let pg-boss create or migrate its schema
 * (the only place pg-boss runs with `migrate: true`) and our queues, copy our jobs out of a shared
 * legacy schema, then the version check every other process makes.
 */
export async function migrateLedger(
  url: string,
  lock: PoolClient,
  opts: { logger?: Logger; timeouts?: Partial<DbTimeouts> } = {},
): Promise<void> {
  const move = await renameLegacyBossSchema(lock, opts.logger);
  const boss = createBoss(url, { max: 2, applicationName: 'tg-relay:migrate', migrate: true, timeouts: opts.timeouts });
  await boss.start();
  try {
    await boss.ensureQueues();
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
  if (move === 'copied') await copyLegacyBossJobs(lock, opts.logger);
  await assertBossSchemaVersion(lock);
}
