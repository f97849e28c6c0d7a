/**
 * SQL of update dispatch on relay.inbox, one function per statement. A claimed update stays
 * `pending` with claim_id set (the inbox has no `delivering` state); `handled` is its delivered.
 *
 * Per-chat order (`ordered`): a row is claimable only when no earlier row of its (bot_id, chat_id)
 * is still `pending` — claimed elsewhere, waiting for its retry, or not yet run. Rows without a
 * chat are never held back. Failed rows do not hold their chat back (see docs/dispatch.md).
 * Times: `$now` is an injected clock's time, or null for the database's now().
 */
import type { Queryable } from '../db/pool';
import { ACTIVATE_SQL, STORED_ERROR_MAX } from '../queue/queries';
import { safeText } from '../queue/errors';

const now = (n: number) => `coalesce($${n}::timestamptz, now())`;

/**
 * Rows of bot `$1` that wait for a worker (alias `i`): unclaimed `pending`, due by `$<dueParam>` if
 * given, and chat heads when `$<orderedParam>` is true.
 */
const waiting = (orderedParam: number, dueParam?: number) => `
  i.bot_id = $1 and i.state = 'pending' and i.claim_id is null${dueParam ? ` and i.next_attempt_at <= ${now(dueParam)}` : ''}
  and (not $${orderedParam}::boolean or i.chat_id is null or not exists (
        select 1 from relay.inbox e
         where e.bot_id = i.bot_id and e.chat_id = i.chat_id and e.state = 'pending' and e.update_id < i.update_id))`;

export interface InboxClaimedRow {
  id: string;
  bot_id: string;
  update_id: string;
  update_type: string;
  chat_id: string | null;
  payload: unknown;
  attempts: number;
  job_id: string | null;
  claim_id: string;
  started_at: Date;
  /** W3C trace context stored by ingress (issue 18); null without tracing. */
  traceparent?: string | null;
}

/**
 * Claims up to `limit` due rows (chat heads only when ordered), oldest due first, and moves their
 * ledger jobs to `active` in the same statement (as the engine's claim-table store does).
 */
export async function inboxClaim(
  db: Queryable,
  args: { botId: string; limit: number; workerId: string; now: Date | null; ordered: boolean; queue: string },
): Promise<{ rows: InboxClaimedRow[]; activated: number }> {
  const { rows } = await db.query<InboxClaimedRow & { activatedJobs?: number }>(
    `with picked as (
       select i.id from relay.inbox i
        where ${waiting(5, 4)}
        order by i.next_attempt_at, i.id
        limit $2
        for update skip locked
     ), claimed as (
       update relay.inbox t
          set attempts = t.attempts + 1, worker_id = $3, claim_id = gen_random_uuid(),
              started_at = ${now(4)}, heartbeat_at = ${now(4)}, updated_at = now()
         from picked
        where t.id = picked.id
       returning t.id::text as id, t.bot_id, t.update_id::text as update_id, t.update_type, t.chat_id::text as chat_id,
                 coalesce(t.raw, t.payload::json) as payload, -- raw: the exact update (0007)
                 t.attempts, t.job_id, t.claim_id::text as claim_id, t.started_at, t.traceparent
     ), activated as (
       ${ACTIVATE_SQL('$6', '(select job_id from claimed where job_id is not null)')}
       returning 1
     )
     select claimed.*, (select count(*) from activated)::int as "activatedJobs" from claimed`,
    [args.botId, args.limit, args.workerId, args.now, args.ordered, args.queue],
  );
  const activated = rows.length ? Number(rows[0].activatedJobs) : 0;
  for (const r of rows) delete r.activatedJobs;
  return { rows, activated };
}

/** Milliseconds until the earliest claimable row is due (0 when overdue), or null when none is waiting. */
export async function inboxNextDueInMs(db: Queryable, args: { botId: string; now: Date | null; ordered: boolean }): Promise<number | null> {
  const { rows } = await db.query<{ ms: number | null }>(
    `select case when min(i.next_attempt_at) is null then null
                else greatest(0, extract(epoch from (min(i.next_attempt_at) - ${now(2)})) * 1000)::float8 end as ms
       from relay.inbox i
      where ${waiting(3)}`,
    [args.botId, args.now, args.ordered],
  );
  const ms = rows[0]?.ms;
  return ms === null || ms === undefined ? null : Math.ceil(Number(ms));
}

export interface InboxSettlement {
  id: string;
  claimId: string;
  /** Engine vocabulary: 'delivered' is written as 'handled'. */
  state: 'delivered' | 'pending' | 'failed';
  delayMs?: number;
  error?: string | null;
  /** For 'pending': the attempt is given back (attempts - 1). */
  uncounted?: boolean;
}

export interface InboxSettledRow {
  id: string;
  claimId: string;
  jobId: string | null;
  /** Engine vocabulary again ('delivered' for handled). */
  state: 'delivered' | 'pending' | 'failed';
  nextAttemptAt: Date | null;
  /** A later pending update of the same chat exists (it waited for this one). */
  hasFollowers: boolean;
}

/** Applies outcomes, fenced by claim id (a row re-claimed or recovered since is left alone). */
export async function inboxSettle(db: Queryable, items: InboxSettlement[], at: Date | null): Promise<InboxSettledRow[]> {
  if (items.length === 0) return [];
  const { rows } = await db.query<InboxSettledRow>(
    `update relay.inbox t
        set state = case x.state when 'delivered' then 'handled' else x.state end,
            next_attempt_at = case when x.state = 'pending' then ${now(2)} + x.delay_ms * interval '1 millisecond' else t.next_attempt_at end,
            handled_at = case when x.state = 'delivered' then ${now(2)} else t.handled_at end,
            last_error = case when x.state = 'delivered' then t.last_error else x.error end,
            attempts = case when x.uncounted then greatest(t.attempts - 1, 0) else t.attempts end,
            claim_id = null, heartbeat_at = null, updated_at = now()
       from json_to_recordset($1::json) as x(id bigint, claim_id uuid, state text, delay_ms float8, error text, uncounted boolean)
      where t.id = x.id and t.claim_id = x.claim_id and t.state = 'pending'
     returning t.id::text as id, x.claim_id::text as "claimId", t.job_id::text as "jobId", x.state as state,
               t.next_attempt_at as "nextAttemptAt",
               (t.chat_id is not null and exists (
                  select 1 from relay.inbox n
                   where n.bot_id = t.bot_id and n.chat_id = t.chat_id and n.state = 'pending' and n.update_id > t.update_id)) as "hasFollowers"`,
    [
      JSON.stringify(
        items.map((s) => ({
          id: s.id,
          claim_id: s.claimId,
          state: s.state,
          delay_ms: s.delayMs ?? 0,
          error: s.error === null || s.error === undefined ? null : safeText(s.error, STORED_ERROR_MAX),
          uncounted: s.uncounted === true && s.state === 'pending',
        })),
      ),
      at,
    ],
  );
  return rows;
}

/**
 * A chat's later updates cannot run before its head, so while the head waits for a retry they are
 * given its due time too (never an earlier one). Pure optimisation of the claim scan, which walks
 * due rows in (next_attempt_at, id) order: without it, a busy chat whose head is backing off puts
 * its whole backlog in front of every other chat's head, for every claim of every replica.
 */
export async function inboxDeferFollowers(db: Queryable, headIds: string[]): Promise<number> {
  if (headIds.length === 0) return 0;
  const { rowCount } = await db.query(
    `update relay.inbox s set next_attempt_at = h.next_attempt_at, updated_at = now()
       from relay.inbox h
      where h.id = any($1::bigint[]) and h.state = 'pending' and h.chat_id is not null
        and s.bot_id = h.bot_id and s.chat_id = h.chat_id and s.state = 'pending' and s.claim_id is null
        and s.update_id > h.update_id and s.next_attempt_at < h.next_attempt_at`,
    [headIds],
  );
  return rowCount ?? 0;
}

/** Refreshes heartbeats; returns the claim ids still held. */
export async function inboxHeartbeat(db: Queryable, claims: { id: string; claimId: string }[], at: Date | null): Promise<string[]> {
  if (claims.length === 0) return [];
  const { rows } = await db.query<{ claimId: string }>(
    `update relay.inbox t set heartbeat_at = ${now(3)}
       from unnest($1::bigint[], $2::uuid[]) as v(id, claim_id)
      where t.id = v.id and t.claim_id = v.claim_id and t.state = 'pending'
     returning v.claim_id::text as "claimId"`,
    [claims.map((c) => c.id), claims.map((c) => c.claimId), at],
  );
  return rows.map((r) => r.claimId);
}

export interface InboxRecoveredRow {
  id: string;
  key: string;
  jobId: string | null;
  state: 'pending' | 'failed';
  attempt: number;
  workerId: string | null;
  startedAt: Date | null;
  heartbeatAt: Date | null;
  nextAttemptAt: Date | null;
}

/**
 * Claims without a heartbeat for `staleMs` (their worker died) go back to unclaimed `pending`, due
 * now, or to `failed` when that attempt was the last of the budget. Any bot's rows: recovery is
 * about dead workers, not about which bot this worker serves.
 */
export async function inboxRecoverStale(
  db: Queryable,
  args: { staleMs: number; now: Date | null; limit: number; maxAttempts: number },
): Promise<InboxRecoveredRow[]> {
  const { rows } = await db.query<InboxRecoveredRow>(
    `with stale as (
       select id, worker_id, started_at, heartbeat_at from relay.inbox
        where state = 'pending' and claim_id is not null
          and coalesce(heartbeat_at, started_at) < ${now(1)} - $2 * interval '1 millisecond'
        order by coalesce(heartbeat_at, started_at)
        limit $3
        for update skip locked
     )
     update relay.inbox t
        set state = case when t.attempts >= $4 then 'failed' else 'pending' end,
            last_error = case when t.attempts >= $4
                              then 'attempt budget spent (' || t.attempts || ' attempts); the last one went stale: no heartbeat from its worker'
                              else 'claim went stale: no heartbeat from its worker' end,
            next_attempt_at = ${now(1)},
            claim_id = null, heartbeat_at = null, updated_at = now()
       from stale
      where t.id = stale.id
     returning t.id::text as id, t.update_id::text as key, t.job_id::text as "jobId", t.state, t.attempts as attempt,
               stale.worker_id as "workerId", stale.started_at as "startedAt", stale.heartbeat_at as "heartbeatAt",
               t.next_attempt_at as "nextAttemptAt"`,
    [args.now, args.staleMs, args.limit, args.maxAttempts],
  );
  return rows;
}

/** Gives unfinished claims back (shutdown): unclaimed, due now, the interrupted attempt not counted. */
export async function inboxRelease(db: Queryable, claims: { id: string; claimId: string }[], at: Date | null): Promise<InboxSettledRow[]> {
  if (claims.length === 0) return [];
  const { rows } = await db.query<InboxSettledRow>(
    `update relay.inbox t
        set attempts = greatest(t.attempts - 1, 0), next_attempt_at = ${now(3)},
            last_error = 'released unfinished at worker shutdown', claim_id = null, heartbeat_at = null, updated_at = now()
       from unnest($1::bigint[], $2::uuid[]) as v(id, claim_id)
      where t.id = v.id and t.claim_id = v.claim_id and t.state = 'pending'
     returning t.id::text as id, v.claim_id::text as "claimId", t.job_id::text as "jobId", 'pending' as state,
               t.next_attempt_at as "nextAttemptAt", false as "hasFollowers"`,
    [claims.map((c) => c.id), claims.map((c) => c.claimId), at],
  );
  return rows;
}
