/**
 * The SQL of retention (docs/retention.md). Each batch statement takes at most `$2` of the oldest
 * rows of one class past the cutoff `$1` with `FOR UPDATE SKIP LOCKED` (a row another transaction
 * holds — a worker finishing it, an operator retrying it, another prune — is left for the next
 * pass), and deletes them together with their relay.attempts rows, their ledger job (the job named
 * by the row's job_id and any job an operator retry superseded) and its archived copy, in one short
 * transaction. Each dry-run statement counts the same rows with the same predicates.
 *
 * The job ledger's tables are addressed only by primary key (name, id) — the key its own
 * deleteJob/getJobById use — through LEDGER_TABLES (libs/db/boss.ts).
 */
import type { Queryable } from '../db/pool';
import { LEDGER_TABLES, QUEUES, QueueName } from '../db/boss';

/** The tables prune reports on, in the order of its JSON line. */
export const PRUNE_TABLES = [
  'captures',
  'outbound',
  'inbox',
  'quarantine',
  'attempts',
  'boss_job',
  'boss_archive',
  'superseded_jobs',
  'prune_runs',
  'outbound_chat_rate',
  'jetstream_rejects',
  'sessions',
] as const;
export type PruneTable = (typeof PRUNE_TABLES)[number];
export type PruneCounts = Record<PruneTable, number>;

export const emptyCounts = (): PruneCounts => Object.fromEntries(PRUNE_TABLES.map((t) => [t, 0])) as PruneCounts;

/** One class of items: a relay table, the state that makes a row eligible and the time it is aged by. */
export interface ItemClass {
  table: 'captures' | 'outbound' | 'inbox' | 'quarantine';
  /** SQL predicate on the table's alias `t` selecting eligible (terminal) rows; never a pending state. */
  stateSql: string;
  /** The terminal timestamp column (indexed for this predicate in sql/0010). */
  timeColumn: string;
  /** relay.attempts.subject of its attempt rows. */
  subject: string;
  /** Its ledger queue; undefined for tables without jobs. */
  queue?: QueueName;
  retention: 'finished' | 'failed';
}

export const ITEM_CLASSES: ItemClass[] = [
  {
    table: 'captures',
    stateSql: `t.state = 'delivered'`,
    timeColumn: 'delivered_at',
    subject: 'capture',
    queue: QUEUES.capture,
    retention: 'finished',
  },
  {
    table: 'outbound',
    stateSql: `t.state = 'delivered'`,
    timeColumn: 'delivered_at',
    subject: 'outbound',
    queue: QUEUES.outbound,
    retention: 'finished',
  },
  {
    table: 'inbox',
    stateSql: `t.state = 'handled'`,
    timeColumn: 'handled_at',
    subject: 'inbox',
    queue: QUEUES.dispatch,
    retention: 'finished',
  },
  {
    table: 'captures',
    stateSql: `t.state = 'failed'`,
    timeColumn: 'updated_at',
    subject: 'capture',
    queue: QUEUES.capture,
    retention: 'failed',
  },
  {
    table: 'outbound',
    stateSql: `t.state = 'failed'`,
    timeColumn: 'updated_at',
    subject: 'outbound',
    queue: QUEUES.outbound,
    retention: 'failed',
  },
  {
    table: 'inbox',
    stateSql: `t.state = 'failed'`,
    timeColumn: 'updated_at',
    subject: 'inbox',
    queue: QUEUES.dispatch,
    retention: 'failed',
  },
  {
    table: 'quarantine',
    stateSql: `t.state in ('released', 'discarded')`,
    timeColumn: 'resolved_at',
    subject: 'quarantine',
    retention: 'failed',
  },
];

const JOB = LEDGER_TABLES.job;
const ARCHIVE = LEDGER_TABLES.archive;
const QUEUE_OF: Record<string, QueueName> = {
  captures: QUEUES.capture,
  outbound: QUEUES.outbound,
  inbox: QUEUES.dispatch,
};

/** Counts deleted by one statement, as numbers keyed by table. */
type CountRow = Record<string, string | number>;

function counts(row: CountRow): Partial<PruneCounts> {
  const out: Partial<PruneCounts> = {};
  for (const [k, v] of Object.entries(row)) out[k as PruneTable] = Number(v);
  return out;
}

/**
 * The rows selected by `victims` (id, job_id), deleted with their attempts, superseded jobs and
 * ledger rows. `d` re-checks the state: a row that changed since the snapshot is not deleted.
 */
function itemCascade(c: ItemClass, dryRun: boolean): string {
  const jobs = c.queue
    ? `s as (${dryRun ? `select s.job_id from relay.superseded_jobs s` : `delete from relay.superseded_jobs s`}
               where s.source = '${c.table}' and s.row_id in (select id from d) ${dryRun ? '' : 'returning s.job_id'}),
       ids as (select job_id from d where job_id is not null union all select job_id from s),
       j as (${dryRun ? `select 1 from ${JOB} x` : `delete from ${JOB} x`} where x.name = '${c.queue}' and x.id in (select job_id from ids) ${dryRun ? '' : 'returning 1'}),
       ar as (${dryRun ? `select 1 from ${ARCHIVE} x` : `delete from ${ARCHIVE} x`} where x.name = '${c.queue}' and x.id in (select job_id from ids) ${dryRun ? '' : 'returning 1'}),`
    : '';
  return `
       a as (${dryRun ? 'select 1 from relay.attempts x' : 'delete from relay.attempts x'}
              where x.subject = '${c.subject}' and x.subject_id in (select id from d) ${dryRun ? '' : 'returning 1'}),
       ${jobs}
       audit_done as (select 1)
     select (select count(*) from d) as ${c.table},
            (select count(*) from a) as attempts
            ${c.queue ? ', (select count(*) from s) as superseded_jobs, (select count(*) from j) as boss_job, (select count(*) from ar) as boss_archive' : ''}`;
}

/** Deletes one batch of class `c` older than `cutoff`; returns what it deleted. */
export async function pruneItemBatch(
  q: Queryable,
  c: ItemClass,
  cutoff: Date,
  limit: number,
): Promise<Partial<PruneCounts>> {
  const jobCol = c.queue ? 't.job_id' : 'null::uuid as job_id';
  const { rows } = await q.query<CountRow>(
    `with victims as (
       select t.id from relay.${c.table} t
        where ${c.stateSql} and t.${c.timeColumn} < $1
        order by t.${c.timeColumn}
        limit $2
        for update skip locked),
     d as (delete from relay.${c.table} t using victims v where t.id = v.id and ${c.stateSql} returning t.id, ${jobCol}),
     ${itemCascade(c, false)}`,
    [cutoff, limit],
  );
  return counts(rows[0]);
}

/** What pruneItemBatch would delete, all batches together. */
export async function pruneItemCount(q: Queryable, c: ItemClass, cutoff: Date): Promise<Partial<PruneCounts>> {
  const jobCol = c.queue ? 't.job_id' : 'null::uuid as job_id';
  const { rows } = await q.query<CountRow>(
    `with d as (select t.id, ${jobCol} from relay.${c.table} t where ${c.stateSql} and t.${c.timeColumn} < $1),
     ${itemCascade(c, true)}`,
    [cutoff],
  );
  return counts(rows[0]);
}

/** Audit rows that belong to no item: admin actions and poller lease events. */
const AUDIT = `x.subject in ('admin', 'cursor')`;

export async function pruneAuditBatch(q: Queryable, cutoff: Date, limit: number): Promise<Partial<PruneCounts>> {
  const { rows } = await q.query<CountRow>(
    `with v as (select x.id from relay.attempts x where ${AUDIT} and x.started_at < $1 order by x.started_at limit $2 for update skip locked),
          d as (delete from relay.attempts x using v where x.id = v.id returning 1)
     select count(*) as attempts from d`,
    [cutoff, limit],
  );
  return counts(rows[0]);
}

export async function pruneAuditCount(q: Queryable, cutoff: Date): Promise<Partial<PruneCounts>> {
  const { rows } = await q.query<CountRow>(
    `select count(*) as attempts from relay.attempts x where ${AUDIT} and x.started_at < $1`,
    [cutoff],
  );
  return counts(rows[0]);
}

/**
 * Jobs an operator retry superseded (failed ledger jobs whose row now has a new job), after
 * RETENTION_FAILED. Only finished jobs (completed, cancelled, failed) are deleted.
 */
export async function pruneSupersededBatch(
  q: Queryable,
  cutoff: Date,
  limit: number,
  dryRun = false,
): Promise<Partial<PruneCounts>> {
  const sources = Object.entries(QUEUE_OF);
  const byQueue = (table: string) =>
    sources
      .map(
        ([source, queue]) =>
          `select 1 from ${table} x where x.name = '${queue}' and x.id in (select job_id from s where source = '${source}') and x.state > 'active'`,
      )
      .join(' union all ');
  if (dryRun) {
    const { rows } = await q.query<CountRow>(
      `with s as (select s.source, s.job_id from relay.superseded_jobs s where s.superseded_at < $1)
       select (select count(*) from s) as superseded_jobs,
              (select count(*) from (${byQueue(JOB)}) z) as boss_job,
              (select count(*) from (${byQueue(ARCHIVE)}) z) as boss_archive`,
      [cutoff],
    );
    return counts(rows[0]);
  }
  const del = (table: string, alias: string) =>
    sources
      .map(
        ([source, queue], i) =>
          `${alias}${i} as (delete from ${table} x where x.name = '${queue}' and x.id in (select job_id from s where source = '${source}') and x.state > 'active' returning 1)`,
      )
      .join(',\n');
  const sum = (alias: string) => sources.map((_, i) => `(select count(*) from ${alias}${i})`).join(' + ');
  const { rows } = await q.query<CountRow>(
    `with v as (select s.id from relay.superseded_jobs s where s.superseded_at < $1 order by s.superseded_at limit $2 for update skip locked),
          s as (delete from relay.superseded_jobs s using v where s.id = v.id returning s.source, s.job_id),
          ${del(JOB, 'j')},
          ${del(ARCHIVE, 'ar')}
     select (select count(*) from s) as superseded_jobs, ${sum('j')} as boss_job, ${sum('ar')} as boss_archive`,
    [cutoff, limit],
  );
  return counts(rows[0]);
}

/** Prune's own history: a month is plenty for /metrics and for an operator's look back. */
export const PRUNE_RUNS_KEEP_MS = 30 * 86_400_000;

/**
 * Rows of a table without attempts or jobs, aged by one timestamp column alone (indexed): the oldest
 * `limit` past `cutoff` (SKIP LOCKED), or their count for a dry run. Table and column are constants.
 */
async function pruneAgedBatch(
  q: Queryable,
  table: 'prune_runs' | 'jetstream_rejects',
  column: 'started_at' | 'created_at',
  cutoff: Date,
  limit: number,
  dryRun: boolean,
): Promise<Partial<PruneCounts>> {
  const { rows } = dryRun
    ? await q.query<CountRow>(`select count(*) as ${table} from relay.${table} where ${column} < $1`, [cutoff])
    : await q.query<CountRow>(
        `with v as (select id from relay.${table} where ${column} < $1 order by ${column} limit $2 for update skip locked),
              d as (delete from relay.${table} r using v where r.id = v.id returning 1)
         select count(*) as ${table} from d`,
        [cutoff, limit],
      );
  return counts(rows[0]);
}

export const pruneRunsBatch = (q: Queryable, cutoff: Date, limit: number, dryRun = false) =>
  pruneAgedBatch(q, 'prune_runs', 'started_at', cutoff, limit, dryRun);

/**
 * JetStream messages the bridge refused (their exact bytes are kept for an operator): they age like
 * failed work, by RETENTION_FAILED from the moment they were refused (jetstream_rejects_created_idx).
 */
export const pruneJetstreamRejectsBatch = (q: Queryable, cutoff: Date, limit: number, dryRun = false) =>
  pruneAgedBatch(q, 'jetstream_rejects', 'created_at', cutoff, limit, dryRun);

/**
 * Rate-limit rows of chats idle past every window: the chat's next send and its group bucket both
 * lie over a minute in the past (by the database clock, whatever the pass's `now`), so the row limits
 * nothing a missing row would not (relay.outbound_rate_* treat both alike; the next charge inserts it
 * again). A row a sender holds is skipped; idle rows carry no history worth a retention setting, so
 * they go on every pass.
 */
export async function pruneChatRateBatch(q: Queryable, limit: number, dryRun = false): Promise<Partial<PruneCounts>> {
  const idle = `r.next_at < now() - interval '1 minute' and coalesce(r.group_tat, '-infinity') < now() - interval '1 minute'`;
  const { rows } = dryRun
    ? await q.query<CountRow>(`select count(*) as outbound_chat_rate from relay.outbound_chat_rate r where ${idle}`)
    : await q.query<CountRow>(
        `with v as (select r.bot_id, r.chat_id from relay.outbound_chat_rate r where ${idle} limit $1 for update skip locked),
              d as (delete from relay.outbound_chat_rate r using v where r.bot_id = v.bot_id and r.chat_id = v.chat_id and ${idle} returning 1)
         select count(*) as outbound_chat_rate from d`,
        [limit],
      );
  return counts(rows[0]);
}

/** The cutoffs of one pass, by the database clock unless a time is given (tests, backdated runs). */
export async function pruneCutoffs(
  q: Queryable,
  now: Date | null,
  retentionMs: number | null,
  retentionFailedMs: number | null,
): Promise<{ now: Date; finished: Date | null; failed: Date | null; runs: Date }> {
  const { rows } = await q.query<{ now: Date; finished: Date | null; failed: Date | null; runs: Date }>(
    `select n as now,
            case when $2::float8 is null then null else n - $2::float8 * interval '1 millisecond' end as finished,
            case when $3::float8 is null then null else n - $3::float8 * interval '1 millisecond' end as failed,
            n - $4::float8 * interval '1 millisecond' as runs
       from (select coalesce($1::timestamptz, now()) as n) x`,
    [now, retentionMs, retentionFailedMs, PRUNE_RUNS_KEEP_MS],
  );
  return rows[0];
}

export async function pruneRunInsert(
  q: Queryable,
  run: {
    startedAt: Date;
    durationMs: number;
    trigger: 'cli' | 'periodic' | 'api';
    workerId: string | null;
    deleted: PruneCounts;
    total: number;
    error: string | null;
  },
): Promise<void> {
  await q.query(
    `insert into relay.prune_runs (started_at, duration_ms, trigger, worker_id, deleted, total, error) values ($1, $2, $3, $4, $5, $6, $7)`,
    [run.startedAt, run.durationMs, run.trigger, run.workerId, JSON.stringify(run.deleted), run.total, run.error],
  );
}

export interface PruneStatus {
  last: {
    started_at: Date;
    duration_ms: number;
    deleted: Partial<PruneCounts>;
    total: number;
    error: string | null;
  } | null;
  runs_24h: number;
  deleted_24h: Partial<PruneCounts>;
}

interface StatusRow {
  last: (Omit<NonNullable<PruneStatus['last']>, 'started_at'> & { started_at: string }) | null;
  runs_24h: number;
  deleted_24h: Record<string, string>;
}

/** For /metrics: the last pass and the last 24 hours. */
export async function pruneStatus(q: Queryable): Promise<PruneStatus> {
  const { rows } = await q.query<StatusRow>(
    `select (select row_to_json(r) from (select started_at, duration_ms, deleted, total, error from relay.prune_runs order by started_at desc limit 1) r) as last,
            (select count(*)::int from relay.prune_runs where started_at > now() - interval '24 hours') as runs_24h,
            (select coalesce(jsonb_object_agg(k, s), '{}'::jsonb) from (
               select e.key as k, sum(e.value::bigint) as s
                 from relay.prune_runs r, jsonb_each_text(r.deleted) e
                where r.started_at > now() - interval '24 hours' group by e.key) z) as deleted_24h`,
  );
  const last = rows[0].last;
  return {
    last: last ? { ...last, started_at: new Date(last.started_at) } : null,
    runs_24h: rows[0].runs_24h,
    deleted_24h: Object.fromEntries(Object.entries(rows[0].deleted_24h).map(([k, v]) => [k, Number(v)])),
  };
}

/**
 * Handler sessions past their expiry (SESSION_TTL after their last write; sql/0026, sessions_expires_idx):
 * they read as absent already, and go on every pass whatever the retention settings. `now` null:
 * the database clock. A session a dispatch is writing (locked) is left for the next pass.
 */
export async function pruneSessionsBatch(
  q: Queryable,
  now: Date | null,
  limit: number,
  dryRun = false,
): Promise<Partial<PruneCounts>> {
  const expired = `s.expires_at <= coalesce($1::timestamptz, now())`;
  const { rows } = dryRun
    ? await q.query<CountRow>(`select count(*) as sessions from relay.sessions s where ${expired}`, [now])
    : await q.query<CountRow>(
        `with v as (select s.bot_id, s.key from relay.sessions s where ${expired}
                     order by s.expires_at limit $2 for update skip locked),
              d as (delete from relay.sessions s using v where s.bot_id = v.bot_id and s.key = v.key and ${expired} returning 1)
         select count(*) as sessions from d`,
        [now, limit],
      );
  return counts(rows[0]);
}
