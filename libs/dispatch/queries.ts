/**
 * SQL of update dispatch on relay.inbox besides the engine's generated claim SQL (claim-sql.ts,
 * from the inbox's table description): the per-chat claim rule and the deferral of a chat's
 * followers. A claimed update stays `pending` with claim_id set (the inbox has no `delivering`
 * state); `handled` is its delivered.
 *
 * Per-chat order (`ordered`): a row is claimable only when no earlier row of its (bot_id, chat_id)
 * is still `pending` — claimed elsewhere, waiting for its retry, or not yet run — and no row of its
 * chat is claimed. Rows without a chat are never held back. Failed rows do not hold their chat back
 * (see docs/dispatch.md); an operator's retry puts one back as the chat's earliest pending row, and
 * the second rule keeps it from running beside the later update already in flight.
 */
import type { Queryable } from '../db/pool';
import { query } from '../db/query';
import { claimStatements, type ClaimedColumns, type ClaimVariant } from '../queue/claim-sql';
import { CLAIM_TABLES } from '../queue/claim-tables';
import { prefetchedSession, SESSION_PREFETCH_COLUMNS, type PrefetchedSession } from './session-queries';

/** The inbox rows bot `bot` (a placeholder) may claim, alias `a`: chat heads only when `ordered`. */
export function inboxClaimable(a: string, bot: string, ordered: boolean): string {
  const own = `${a}.bot_id = ${bot}`;
  if (!ordered) return own;
  return `${own}
  and (${a}.chat_id is null or not exists (
        select 1 from relay.inbox e
         where e.bot_id = ${a}.bot_id and e.chat_id = ${a}.chat_id and e.state = 'pending' and e.update_id < ${a}.update_id)
      and not exists ( -- inbox_claimed_chat_idx (0024)
        select 1 from relay.inbox e
         where e.bot_id = ${a}.bot_id and e.chat_id = ${a}.chat_id and e.state = 'pending' and e.claim_id is not null))`;
}

/** The kind's columns of a claimed inbox row (after the engine's id, job_id, claim_id, attempts). */
export const INBOX_CLAIMED_COLUMNS = `t.bot_id, t.update_id::text as update_id, t.update_epoch, t.update_type, t.chat_id::text as chat_id,
                 coalesce(t.raw, t.payload::json) as payload, -- raw: the exact update (0007)
                 t.started_at, t.traceparent, ${SESSION_PREFETCH_COLUMNS}`;

/** Whether a settled row's chat has another pending update (it waited for this one; a retried earlier one too). */
export const INBOX_SETTLED_COLUMNS = `(t.chat_id is not null and exists (
                  select 1 from relay.inbox n
                   where n.bot_id = t.bot_id and n.chat_id = t.chat_id and n.state = 'pending' and n.id <> t.id)) as "hasFollowers"`;

/** The inbox's claim variant for one bot: its rows, chat heads only when `ordered`; settled rows say whether their chat has followers. */
export function inboxClaimVariant(botId: string, ordered: boolean): ClaimVariant {
  return {
    where: (p) => inboxClaimable('c', p(botId), ordered),
    columns: INBOX_CLAIMED_COLUMNS,
    settledColumns: INBOX_SETTLED_COLUMNS,
  };
}

export interface InboxClaimedRow {
  id: string;
  bot_id: string;
  update_id: string;
  /** 0, or how many other updates were stored under this update_id before (Telegram reuses ids). */
  update_epoch: number;
  update_type: string;
  chat_id: string | null;
  payload: unknown;
  attempts: number;
  job_id: string | null;
  claim_id: string;
  started_at: Date;
  /** W3C trace context stored by ingress; null without tracing. */
  traceparent?: string | null;
  /** Its session under telegraf's default key, read by the claim (undefined: no sender or no chat). */
  session?: PrefetchedSession;
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

const claimSql = new Map<string, ReturnType<typeof claimStatements>>();

/**
 * Claims up to `limit` due rows of the bot (chat heads only when ordered), oldest due first, and
 * activates their ledger jobs, in one statement: the inbox store's claim without the engine
 * around it (tests and tools). Rows as the store's `row`.
 */
export async function inboxClaim(
  db: Queryable,
  args: { botId: string; limit: number; workerId: string; now: Date | null; ordered: boolean; queue: string },
): Promise<{ rows: InboxClaimedRow[]; activated: number }> {
  const variant = `${args.botId}:${args.ordered}`;
  let sql = claimSql.get(variant);
  if (!sql)
    claimSql.set(variant, (sql = claimStatements(CLAIM_TABLES.inbox, inboxClaimVariant(args.botId, args.ordered))));
  const rows = await query(db, sql.claim, [args.limit, args.workerId, args.now, args.queue, ...sql.claimValues]);
  const activated = rows.length ? (rows[0].activatedJobs ?? 0) : 0;
  return { activated, rows: rows.map(inboxRowOf) };
}

/** A claimed row (claim-sql.ts's standard columns + INBOX_CLAIMED_COLUMNS) as InboxClaimedRow. */
export function inboxRowOf(r: ClaimedColumns): InboxClaimedRow {
  return {
    id: r.id,
    bot_id: text(r.bot_id),
    update_id: text(r.update_id),
    update_epoch: typeof r.update_epoch === 'number' ? r.update_epoch : 0,
    update_type: text(r.update_type),
    chat_id: r.chat_id === null || r.chat_id === undefined ? null : text(r.chat_id),
    payload: r.payload,
    attempts: r.attempts,
    job_id: r.job_id,
    claim_id: r.claim_id,
    started_at: r.started_at instanceof Date ? r.started_at : new Date(text(r.started_at)),
    traceparent: typeof r.traceparent === 'string' ? r.traceparent : null,
    session: prefetchedSession(r.session),
  };
}

/** A text column's value (the claim returns these columns as text). */
const text = (v: unknown): string =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'bigint' ? v.toString() : '';
