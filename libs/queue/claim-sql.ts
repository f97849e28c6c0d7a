/**
 * The claim/settle/heartbeat/release/recover-stale/next-due SQL of every work type, generated once
 * from its table description (claim-tables.ts) and a claim variant (the kind's extra claim rule,
 * e.g. the per-chat ordering of the inbox and of outbound). One function builds each statement; a
 * ClaimStore (createClaimStore) wraps them with the kind's typed effects step.
 *
 * Statements are built once per store (the variant is fixed at creation); values only as $n
 * parameters; table and column names are escaped constants, never input.
 * Times: `$now` is the injected clock's time, or null for the database's now() (see clock.ts).
 */
import type { Queryable } from '../db/pool';
import { prepared, query, statement } from '../db/query';
import type { ClaimTableDescription } from './claim-tables';
import { safeText } from './errors';
import type { ClaimedJob, ClaimRef, ClaimStore, RecoveredRow, SettledRow, Settlement, SettleMirror } from './job-kind';
import { activateJobsSql, completeJobsSql, failJobsSql, rescheduleJobsSql } from '../db/boss';
import { ATTEMPT_COLUMNS, ATTEMPT_RECORD_TYPES, attemptJson, STORED_ERROR_MAX } from './queries';
import { safeJson } from './errors';

const now = (n: number) => `coalesce($${n}::timestamptz, now())`;
const safeError = (s: string | null | undefined): string | null =>
  s === null || s === undefined ? null : safeText(String(s), STORED_ERROR_MAX);

/**
 * Registers a parameter value and returns its placeholder (`$n`). A function is a value read at
 * each claim and next-due query (the bots a fleet worker serves now, their free slots).
 */
export type Param = (value: unknown) => string;

/** The values of one statement: functions registered through `Param` are read now. */
const valuesNow = (values: readonly unknown[]): unknown[] =>
  values.map((v) => (typeof v === 'function' ? (v as () => unknown)() : v));

/** A kind's rule on top of its table's: which pending rows it may claim, and in which order. */
export interface ClaimVariant {
  /**
   * Extra condition on the candidate row (alias `c`), for the claim and the next-due query alike,
   * e.g. the bot, the chat head rule, the rate limits. Values through `p`.
   */
  where?: (p: Param) => string;
  /** Claim order (alias `c`); default oldest due first: `c.next_attempt_at, c.id`. */
  order?: string;
  /**
   * Shares one claim between the values of a column (a fleet worker's bots): candidates are taken
   * key by key in the order of `keys`, at most the key's entry of `limits` each, until the claim's
   * limit. `keys` (text[]) and `limits` (int[]) are placeholders from `Param`; the caller rotates
   * the keys between claims so that each key is first in turn.
   */
  fairBy?: (p: Param) => { column: string; keys: string; limits: string };
  /**
   * The rows the kind serves at all (a fleet's bots), for the next-due query, and for the claim
   * unless `fairBy` names the keys (they lie within it; repeating a list of a thousand bots in each
   * key's probe would cost one index descent per bot and key).
   */
  scope?: (p: Param) => string;
  /**
   * The kind's columns of the claimed row (alias `t`), after the standard ones (id, job_id,
   * claim_id, attempts, and max_attempts where the table has it), e.g. `t.payload`; or `*` for the
   * whole row (id as text).
   */
  columns?: string;
  /** Extra columns of settled rows (alias `t`) for the effects step, e.g. whether a chat has followers. */
  settledColumns?: string;
  /**
   * A data-modifying statement run inside the settle statement, over the CTE `settled` (columns
   * `id`, `state`, …), e.g. the end of a configuration problem when anything was delivered. Values
   * through `p`.
   */
  settledStep?: (p: Param) => string;
}

/** A claimed row as a kind receives it by default: the standard claim columns, then the variant's. */
export interface ClaimedColumns {
  /** bigint, as text. */
  id: string;
  job_id: string | null;
  claim_id: string;
  attempts: number;
  max_attempts?: number | null;
  [column: string]: unknown;
}

/** What the claim statement returns: the business key, the row's bot, and the claimed columns. */
export interface ClaimedTableRow extends ClaimedColumns {
  claimKey: string;
  claimBot: string;
}

type SettledTableRow = SettledRow & Record<string, unknown>;

/** The conditions given, joined with `and` (undefined if none). */
const and = (...conds: (string | undefined)[]): string | undefined =>
  conds.filter((c): c is string => !!c).join(' and ') || undefined;

function params(first: number): { p: Param; values: unknown[] } {
  const values: unknown[] = [];
  return { p: (v) => `$${first + values.push(v) - 1}`, values };
}

/** The generated statements of one table and variant (exported for the tests and benches that print them). */
export function claimStatements(t: ClaimTableDescription, v: ClaimVariant = {}) {
  return { ...claimingStatements(t, v), ...settlingStatements(t, v), ...keepingStatements(t) };
}

/** The row state of a claimed row, as an SQL literal. */
const claimedState = (t: ClaimTableDescription) => `'${t.workType.model.claimed}'`;

/** A candidate row (alias `c`) nobody holds: pending and, where the claim keeps the state (inbox), without a claim id. */
const unclaimedPending = (t: ClaimTableDescription) =>
  t.workType.model.claimMarksState ? `c.state = 'pending'` : `c.state = 'pending' and c.claim_id is null`;

/** The row's attempt budget (alias `t`): its own column where the table has one, else the kind's ($4). */
const attemptBudget = (t: ClaimTableDescription) => (t.budgetColumn ? `coalesce(t.${t.budgetColumn}, $4)` : '$4');

/**
 * Settle, heartbeat and release lock their rows in id order first (a locking CTE: LockRows above
 * the sort), so two of them over overlapping claims (a heartbeat tick while an outcome batch is
 * written) can never take the same rows in opposite orders: that deadlocked ~70 times per full
 * soak, each costing deadlock_timeout before PostgreSQL aborted one side. `input` (alias x) has at
 * least (id, claim_id); `locked` carries those input rows whose claim still holds (the fence:
 * checked on the row's newest version under the lock, which the statement keeps until its update).
 */
const lockInOrder = (t: ClaimTableDescription, input: string) =>
  `with locked as (
       select x.* from ${t.table} t join ${input} on t.id = x.id and t.claim_id = x.claim_id
        where t.state = ${claimedState(t)} order by t.id for update of t)`;

/**
 * The claim (with the ledger activation of the claimed jobs) and the next-due query; without
 * `fairBy`, also the claim of given rows (`claimKeys`): the same rules, over the rows whose business
 * key is in `$5`, for a caller that has just written them in its own transaction.
 */
function claimingStatements(t: ClaimTableDescription, v: ClaimVariant) {
  const { claim, values: claimValues } = claimSql(t, v, 'due');
  const keyed = v.fairBy ? undefined : claimSql(t, v, 'keys');
  const dueParams = params(2);
  const dueWhere = and(v.scope?.(dueParams.p), v.where?.(dueParams.p));
  const nextDue = prepared<{ ms: number | null }>(
    `select case when min(c.next_attempt_at) is null then null
                else greatest(0, extract(epoch from (min(c.next_attempt_at) - ${now(1)})) * 1000)::float8 end as ms
       from ${t.table} c
      where ${unclaimedPending(t)}${dueWhere ? ` and ${dueWhere}` : ''}`,
  );
  return {
    claim,
    claimValues,
    claimKeys: keyed?.claim,
    claimKeysValues: keyed?.values ?? [],
    nextDue,
    nextDueValues: dueParams.values,
  };
}

/**
 * One claim statement: `due` rows ($1 limit, $2 worker, $3 now, $4 queue, then the variant's), or
 * with `keys` only the due rows whose key is in $5 (text[]), the variant's values after it.
 */
function claimSql(t: ClaimTableDescription, v: ClaimVariant, of: 'due' | 'keys') {
  const m = t.workType.model;
  const claimParams = params(of === 'keys' ? 6 : 5);
  const fair = of === 'due' ? v.fairBy?.(claimParams.p) : undefined;
  const claimWhere = and(
    of === 'keys' ? `c.${t.key} = any($5::text[])` : undefined,
    fair ? undefined : v.scope?.(claimParams.p),
    v.where?.(claimParams.p),
  );
  const candidates = (limit: string, extra: string) =>
    `select c.id from ${t.table} c
        where ${unclaimedPending(t)} and c.next_attempt_at <= ${now(3)}${extra}${claimWhere ? ` and ${claimWhere}` : ''}
        order by ${v.order ?? 'c.next_attempt_at, c.id'}
        limit ${limit}
        for update of c skip locked`;
  // fairBy: a nested loop over the keys, each taking at most its limit; the outer limit stops it early
  const picked = fair
    ? `select x.id from unnest(${fair.keys}::text[], ${fair.limits}::int[]) as f(key, n)
        cross join lateral (${candidates('f.n', ` and c.${fair.column} = f.key`)}) x
        limit $1`
    : candidates('$1', '');
  const claim = prepared<ClaimedTableRow & { activatedJobs?: number }>(
    `with picked as (
       ${picked}
     ), claimed as (
       update ${t.table} t
          set ${m.claimMarksState ? `state = ${claimedState(t)}, ` : ''}attempts = t.attempts + 1, worker_id = $2, claim_id = gen_random_uuid(),
              started_at = ${now(3)}, heartbeat_at = ${now(3)}, updated_at = now()
         from picked
        where t.id = picked.id
       returning ${
         v.columns === '*'
           ? `t.*, t.${t.key}::text as "claimKey", t.bot_id as "claimBot"`
           : `t.id::text as id, t.${t.key}::text as "claimKey", t.bot_id as "claimBot", t.job_id, t.claim_id::text as claim_id, t.attempts${
               t.budgetColumn ? `, t.${t.budgetColumn}` : ''
             }${v.columns ? `, ${v.columns}` : ''}`
       }
     ), activated as (
       ${activateJobsSql('$4', '(select job_id from claimed where job_id is not null)')}
       returning 1
     )
     select claimed.*${v.columns === '*' ? ', claimed.id::text as id' : ''}, (select count(*) from activated)::int as "activatedJobs" from claimed`,
  );
  return { claim, values: claimParams.values };
}

const SETTLE_INPUT =
  'x(id bigint, claim_id uuid, state text, delay_ms float8, status integer, error text, failed_reason text, uncounted boolean, ledger_output jsonb)';

/** The update of a settle over `locked` (the outcomes whose claims held), returning the settled rows. */
function settleUpdateSql(t: ClaimTableDescription, v: ClaimVariant): string {
  const done = t.workType.model.done;
  const outcome = t.outcomeColumns
    ? `last_status = x.status,
            last_error = x.error,
            failed_reason = case when x.state = 'failed' then x.failed_reason end,`
    : `last_error = case when x.state = 'delivered' then t.last_error else x.error end,`;
  return `update ${t.table} t
        set state = ${done === 'delivered' ? 'x.state' : `case x.state when 'delivered' then '${done}' else x.state end`},
            next_attempt_at = case when x.state = 'pending' then ${now(2)} + x.delay_ms * interval '1 millisecond' else t.next_attempt_at end,
            ${t.doneAtColumn} = case when x.state = 'delivered' then ${now(2)} else t.${t.doneAtColumn} end,
            ${outcome}
            attempts = case when x.uncounted then greatest(t.attempts - 1, 0) else t.attempts end,
            claim_id = null, heartbeat_at = null, updated_at = now()
       from locked x
      where t.id = x.id
     returning t.id::text as id, x.claim_id::text as "claimId", t.job_id::text as "jobId", x.state as state, t.next_attempt_at as "nextAttemptAt"${
       v.settledColumns ? `, ${v.settledColumns}` : ''
     }`;
}

/** The settle of a batch of outcomes, alone and with the ledger mirror and the audit rows. */
function settlingStatements(t: ClaimTableDescription, v: ClaimVariant) {
  // both lock the outcomes' rows and update them alike; the mirrored one adds the ledger and audit
  const locked = lockInOrder(t, `json_to_recordset($1::json) as ${SETTLE_INPUT}`);
  const update = settleUpdateSql(t, v);
  const settleParams = params(3);
  const settleStep = v.settledStep?.(settleParams.p);
  const settle = prepared<SettledTableRow>(
    `${locked},
     settled as (
     ${update}
     )${settleStep ? `, step as (${settleStep})` : ''}
     select * from settled`,
  );
  const mirroredParams = params(6);
  return {
    settle,
    settleValues: settleParams.values,
    settleMirrored: settleMirroredStatement({ locked, update, step: v.settledStep?.(mirroredParams.p) }),
    settleMirroredValues: mirroredParams.values,
  };
}

/**
 * The settle with the ledger mirror and the audit rows in the one statement (one round trip, atomic
 * without a transaction of its own): $3 the queue, $4 the reschedule output, $5 the audit rows, each
 * with the variants for a claim that held and one that was lost; a held retry's row gets its next
 * attempt time (as JSON would write a Date, so the row reads as before).
 */
function settleMirroredStatement(parts: { locked: string; update: string; step: string | undefined }) {
  const { locked, update, step } = parts;
  const settledJobs = (state: string, cols: string) =>
    `(select ${cols} from settled s where s.state = '${state}' and s."jobId" is not null)`;
  const nextAttemptJson = `to_char(s."nextAttemptAt" at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  return prepared<SettledTableRow & { ledger_output?: unknown }>(
    `${locked},
     settled as (
     ${update}, x.ledger_output
     ),
     completed as (${completeJobsSql('$3', settledJobs('delivered', 's."jobId"::uuid'))} returning 1),
     rescheduled as (${rescheduleJobsSql(
       '$3',
       settledJobs('pending', 's."jobId"::uuid as id, s."nextAttemptAt" as start_after'),
       '$4::jsonb',
     )} returning 1),
     failed as (${failJobsSql('$3', settledJobs('failed', 's."jobId"::uuid as id, s.ledger_output as output'))} returning 1),
     audit as (
       insert into relay.attempts (${ATTEMPT_COLUMNS})
       select a.subject, a.subject_id, a.subject_key, a.attempt, a.worker_id, a.started_at, a.finished_at, a.duration_ms,
              a.outcome, a.http_status,
              case when s.id is null then a.fenced_error_code else a.error_code end,
              case when s.id is null then a.fenced_error else a.error end,
              case when s.id is null then a.fenced_details
                   when s.state = 'pending' and s."nextAttemptAt" is not null
                     then coalesce(a.details, '{}'::jsonb) || jsonb_build_object('nextAttemptAt', ${nextAttemptJson})
                   else a.details end
         from json_to_recordset($5::json) as a(${ATTEMPT_RECORD_TYPES}, fenced_error_code text, fenced_error text,
              fenced_details jsonb, claim_id text, n integer)
         left join settled s on s."claimId" = a.claim_id
        order by a.n
       returning 1
     )${step ? `, step as (${step})` : ''}
     select * from settled`,
  );
}

/** What keeps claims honest: the heartbeat, the recovery of stale claims, the release at shutdown. */
function keepingStatements(t: ClaimTableDescription) {
  const m = t.workType.model;
  const claimed = claimedState(t);
  // The heartbeat skips rows another session holds (an operator's open transaction): waiting on one
  // past DB_LOCK_TIMEOUT failed the whole statement, and with it every claim's renewal. A skipped row
  // whose claim still holds (read from the statement's snapshot, no lock) is reported as held but not
  // renewed; the loop then judges that claim alone by its own last renewal.
  const heartbeat = prepared<{ claimId: string; renewed: boolean }>(
    `with input as (select * from unnest($1::bigint[], $2::uuid[]) as x(id, claim_id)),
     locked as (
       select x.* from ${t.table} t join input x on t.id = x.id and t.claim_id = x.claim_id
        where t.state = ${claimed} order by t.id for update of t skip locked),
     renewed as (
       update ${t.table} t set heartbeat_at = ${now(3)}
         from locked x
        where t.id = x.id
       returning x.claim_id)
     select x.claim_id::text as "claimId", (r.claim_id is not null) as renewed
       from input x
       join ${t.table} t on t.id = x.id and t.claim_id = x.claim_id and t.state = ${claimed}
       left join renewed r on r.claim_id = x.claim_id`,
  );

  const budget = attemptBudget(t);
  const spent = `'attempt budget spent (' || t.attempts || ' attempts); the last one went stale`;
  const staleOutcome = t.outcomeColumns
    ? `failed_reason = case when t.attempts >= ${budget} then ${spent}' end,
            last_error = 'claim went stale: no heartbeat from its worker',
            last_status = null,`
    : `last_error = case when t.attempts >= ${budget} then ${spent}: no heartbeat from its worker'
                              else 'claim went stale: no heartbeat from its worker' end,`;
  const recoverStale = statement<RecoveredRow>(
    `with stale as (
       select id, worker_id, started_at, heartbeat_at from ${t.table}
        where state = ${claimed}${m.claimMarksState ? '' : ' and claim_id is not null'}
          and ${t.staleSince} < ${now(1)} - $2 * interval '1 millisecond'
        order by ${t.staleOrder}
        limit $3
        for update skip locked
     )
     update ${t.table} t
        set state = case when t.attempts >= ${budget} then 'failed' else 'pending' end,
            ${staleOutcome}
            next_attempt_at = ${now(1)},
            claim_id = null, heartbeat_at = null, updated_at = now()
       from stale
      where t.id = stale.id
     returning t.id::text as id, t.${t.key}::text as key, t.job_id::text as "jobId", t.state, t.attempts as attempt,
               stale.worker_id as "workerId", stale.started_at as "startedAt", stale.heartbeat_at as "heartbeatAt",
               t.next_attempt_at as "nextAttemptAt"`,
  );

  const release = statement<SettledRow>(
    `${lockInOrder(t, 'unnest($1::bigint[], $2::uuid[]) as x(id, claim_id)')}
     update ${t.table} t
        set ${m.claimMarksState ? `state = 'pending', ` : ''}attempts = greatest(t.attempts - 1, 0), next_attempt_at = ${now(3)},
            last_error = 'released unfinished at worker shutdown', claim_id = null, heartbeat_at = null, updated_at = now()
       from locked x
      where t.id = x.id
     returning t.id::text as id, x.claim_id::text as "claimId", t.job_id::text as "jobId", t.state, t.next_attempt_at as "nextAttemptAt"`,
  );
  return { heartbeat, recoverStale, release };
}

/** A settled item whose claim still held, with its settled row (and the variant's settled columns). */
export interface Landed<Effects> {
  settlement: Settlement<Effects>;
  row: SettledTableRow;
}

export interface ClaimStoreOptions<Row, Effects> extends ClaimVariant {
  /** The claimed row as the kind reads it (default: the claim's columns without `claimKey` and `claimBot`). */
  toRow?: (r: ClaimedColumns) => Row;
  /** Replaces the generated next-due query (outbound's skip scan over its chats). */
  nextDueInMs?: (db: Queryable, now: Date | null) => Promise<number | null>;
  /**
   * The effects step: runs in the outcome transaction after the rows were settled, with the items
   * whose claim still held (fenced ones are not passed) and their typed effects.
   */
  effects?: (db: Queryable, landed: Landed<Effects>[]) => Promise<void>;
  /** After stale claims were recovered, in the same transaction (may change their state or label). */
  afterRecover?: (db: Queryable, rows: RecoveredRow[]) => Promise<RecoveredRow[]>;
  /** Claims `release` may give back (default all); the others stay for stale recovery. */
  releasable?: (claim: ClaimRef) => boolean;
  /** After claims were given back at shutdown, in the same transaction (as afterRecover). */
  afterRelease?: (db: Queryable, rows: SettledRow[]) => Promise<void>;
  /**
   * True when the effects step has nothing to do for these outcomes, whatever settles (then an
   * outcome batch is its settle statement alone, committed without a transaction around it).
   * Without it, a store with an effects step always settles in a transaction.
   */
  effectsIdle?: (items: Settlement<Effects>[]) => boolean;
}

const STANDALONE = Symbol('settle is one statement');

/**
 * True when `store.settle(items)` sends one statement and nothing else (the generated settle with the
 * ledger mirror, no effects to apply): the engine then sends it without BEGIN/COMMIT around it, as a
 * single statement is atomic. A store whose `settle` was replaced (a test wrapping it) answers false.
 */
export function settlesInOneStatement<E>(store: ClaimStore<unknown, E>, items: Settlement<E>[]): boolean {
  const mark = (store.settle as unknown as { [STANDALONE]?: (items: Settlement<E>[]) => boolean })[STANDALONE];
  return mark?.(items) === true;
}

/** One audit row of the settle statement: the row if the claim held, and what differs if it was lost. */
function auditPair(claimId: string, m: SettleMirror, n: number): Record<string, unknown> {
  const fenced = attemptJson(m.fenced);
  return {
    ...attemptJson(m.landed),
    fenced_error_code: fenced.error_code,
    fenced_error: fenced.error,
    fenced_details: fenced.details,
    claim_id: claimId,
    n,
  };
}

const rowOf = ({ claimKey: _k, claimBot: _b, ...row }: ClaimedTableRow): ClaimedColumns => row;

/** The ClaimStore of a described table: the generated SQL plus the kind's variant and effects step. */
export function createClaimStore<Row, Effects = unknown>(
  t: ClaimTableDescription,
  opts: ClaimStoreOptions<Row, Effects>,
): ClaimStore<Row, Effects> {
  const sql = claimStatements(t, opts);
  const toRow = opts.toRow;
  const hasBudget = t.budgetColumn !== null;
  async function claimed(
    db: Queryable,
    claim: typeof sql.claim,
    values: unknown[],
    args: { onJobsOutOfStep?: (expected: number, moved: number) => void },
  ): Promise<ClaimedJob<Row>[]> {
    const rows = await query(db, claim, values);
    const activated = rows.length ? (rows[0].activatedJobs ?? 0) : 0;
    const withJob = rows.filter((r) => r.job_id).length;
    if (activated !== withJob) args.onJobsOutOfStep?.(withJob, activated);
    return rows.map((r): ClaimedJob<Row> => {
      delete r.activatedJobs;
      const row = rowOf(r);
      return {
        id: r.id,
        key: r.claimKey,
        botId: r.claimBot,
        jobId: r.job_id ?? null,
        claimId: r.claim_id,
        attempt: Number(r.attempts),
        maxAttempts: hasBudget ? (r.max_attempts ?? null) : null,
        row: toRow ? toRow(row) : (row as Row),
      };
    });
  }
  const store: ClaimStore<Row, Effects> = {
    subject: t.workType.subject,
    activatesJobs: true,
    mirrorsInSettle: true,
    claim: (db, args) =>
      claimed(db, sql.claim, [args.limit, args.workerId, args.now, args.queue, ...valuesNow(sql.claimValues)], args),
    ...(sql.claimKeys
      ? {
          claimKeys: (db: Queryable, args: Parameters<NonNullable<ClaimStore<Row, Effects>['claimKeys']>>[1]) =>
            claimed(
              db,
              sql.claimKeys!,
              [args.limit, args.workerId, args.now, args.queue, args.keys, ...valuesNow(sql.claimKeysValues)],
              args,
            ),
        }
      : {}),
    nextDueInMs:
      opts.nextDueInMs ??
      (async (db, at) => {
        const [r] = await query(db, sql.nextDue, [at, ...valuesNow(sql.nextDueValues)]);
        const ms = r?.ms;
        return ms === null || ms === undefined ? null : Math.ceil(Number(ms));
      }),
    settle: Object.assign(
      async (db: Queryable, items: Settlement<Effects>[], at: Date | null): Promise<SettledRow[]> => {
        if (items.length === 0) return [];
        const mirror = items[0].mirror;
        if (items.some((s) => (s.mirror === undefined) !== (mirror === undefined)))
          throw new Error('settle: either every item carries its mirror or none does');
        const input = JSON.stringify(
          items.map((s) => ({
            id: s.id,
            claim_id: s.claimId,
            state: s.state,
            delay_ms: s.delayMs ?? 0,
            status: s.status ?? null,
            // without a failed_reason column the reason of a failure is the row's last_error
            error: safeError(t.outcomeColumns || s.state !== 'failed' ? s.error : (s.failedReason ?? s.error)),
            failed_reason: safeError(s.failedReason),
            uncounted: s.uncounted === true && s.state === 'pending',
            ledger_output: s.mirror ? safeJson(s.mirror.failOutput) : null,
          })),
        );
        const rows = mirror
          ? await query(db, sql.settleMirrored, [
              input,
              at,
              mirror.queue,
              JSON.stringify(safeJson({ outcome: 'retry' })),
              JSON.stringify(items.map((s, n) => auditPair(s.claimId, s.mirror!, n))),
              ...sql.settleMirroredValues,
            ])
          : await query(db, sql.settle, [input, at, ...sql.settleValues]);
        for (const r of rows) delete r.ledger_output;
        if (opts.effects) {
          const byClaim = new Map(items.map((s) => [s.claimId, s]));
          await opts.effects(
            db,
            rows.map((row) => ({ settlement: byClaim.get(row.claimId)!, row })),
          );
        }
        return rows.map((r): SettledRow => ({
          id: r.id,
          claimId: r.claimId,
          jobId: r.jobId,
          state: r.state,
          nextAttemptAt: r.nextAttemptAt,
        }));
      },
      {
        [STANDALONE]: (items: Settlement<Effects>[]) =>
          items.length > 0 && items[0].mirror !== undefined && (!opts.effects || opts.effectsIdle?.(items) === true),
      },
    ),
    async heartbeat(db, claims, at) {
      if (claims.length === 0) return { renewed: [], held: [] };
      const rows = await query(db, sql.heartbeat, [claims.map((c) => c.id), claims.map((c) => c.claimId), at]);
      return {
        renewed: rows.filter((r) => r.renewed).map((r) => r.claimId),
        held: rows.filter((r) => !r.renewed).map((r) => r.claimId),
      };
    },
    async recoverStale(db, args) {
      const rows = await query(db, sql.recoverStale, [args.now, args.staleMs, args.limit, args.maxAttempts]);
      return opts.afterRecover ? opts.afterRecover(db, rows) : rows;
    },
    async release(db, claims, at) {
      const mine = opts.releasable ? claims.filter(opts.releasable) : claims;
      if (mine.length === 0) return [];
      const rows = await query(db, sql.release, [mine.map((c) => c.id), mine.map((c) => c.claimId), at]);
      if (opts.afterRelease) await opts.afterRelease(db, rows);
      return rows;
    },
  };
  return store;
}
