/**
 * The SQL of relay.broadcasts and its rows in relay.outbound (sql/0029_broadcasts.sql,
 * sql/functions/broadcast_enqueue.sql), one function per statement. Values only as $n parameters.
 */
import type { Queryable } from '../db/pool';
import type { BroadcastPlan } from './plan';

export type StoredBroadcastState = 'running' | 'paused' | 'cancelled';

export interface BroadcastRow {
  id: string;
  bot_id: string;
  key: string | null;
  state: StoredBroadcastState;
  method: string;
  audience: Record<string, unknown>;
  include_blocked: boolean;
  recipients: number;
  skipped: number;
  paid: boolean;
  plan: BroadcastPlan;
  request_sha256: string;
  created_at: Date;
  /** Recipients staged at creation (relay.broadcast_recipients); 0 for a broadcast enqueued whole. */
  staged: number;
  /** The feed cursor: recipients 1..fed are fed. */
  fed: number;
}

export interface BroadcastInsert {
  botId: string;
  key: string | null;
  method: string;
  text: string | null;
  parseMode: string | null;
  disableNotification: boolean;
  replyMarkup: Record<string, unknown> | null;
  sendOptions: Record<string, unknown> | null;
  params: Record<string, unknown> | null;
  audience: Record<string, unknown>;
  includeBlocked: boolean;
  paid: boolean;
  requestSha256: string;
}

const COLUMNS = `id::text as id, bot_id, key, state, method, audience, include_blocked, recipients, skipped, paid, plan,
                 request_sha256, created_at, staged, fed`;

/** Inserts the broadcast; null when its key is taken (the caller reads that one). */
export async function broadcastInsert(db: Queryable, b: BroadcastInsert): Promise<BroadcastRow | null> {
  const { rows } = await db.query<BroadcastRow>(
    `insert into relay.broadcasts (bot_id, key, method, text, parse_mode, disable_notification, reply_markup,
                                   send_options, params, audience, include_blocked, paid, request_sha256)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     on conflict (key) do nothing
     returning ${COLUMNS}`,
    [
      b.botId,
      b.key,
      b.method,
      b.text,
      b.parseMode,
      b.disableNotification,
      b.replyMarkup,
      b.sendOptions,
      b.params,
      b.audience,
      b.includeBlocked,
      b.paid,
      b.requestSha256,
    ],
  );
  return rows[0] ?? null;
}

export async function broadcastByKey(db: Queryable, key: string): Promise<BroadcastRow | null> {
  const { rows } = await db.query<BroadcastRow>(`select ${COLUMNS} from relay.broadcasts where key = $1`, [key]);
  return rows[0] ?? null;
}

/** The broadcast, locked for update when `lock` (pause/resume/cancel). */
export async function broadcastById(db: Queryable, id: string, lock = false): Promise<BroadcastRow | null> {
  const { rows } = await db.query<BroadcastRow>(
    `select ${COLUMNS} from relay.broadcasts where id = $1::bigint${lock ? ' for update' : ''}`,
    [id],
  );
  return rows[0] ?? null;
}

/** Enqueues the broadcast's rows (chat ids, or its registered audience when null). */
export async function broadcastEnqueue(
  db: Queryable,
  id: string,
  chatIds: string[] | null,
): Promise<{ enqueued: number; skipped: number }> {
  const { rows } = await db.query<{ enqueued: number; skipped: number }>(
    'select enqueued, skipped from relay.broadcast_enqueue($1::bigint, $2::text[])',
    [id, chatIds],
  );
  return rows[0];
}

/** Stages the broadcast's recipients (chat ids, or its registered audience when null): no outbound row yet. */
export async function broadcastStage(
  db: Queryable,
  id: string,
  chatIds: string[] | null,
): Promise<{ staged: number; skipped: number }> {
  const { rows } = await db.query<{ staged: number; skipped: number }>(
    'select staged, skipped from relay.broadcast_stage($1::bigint, $2::text[])',
    [id, chatIds],
  );
  return rows[0];
}

export interface FeedResult {
  /** Outbound rows (and ledger jobs) inserted. */
  fed: number;
  /** Chats blocked since the broadcast was created: not fed, counted as skipped. */
  skipped: number;
  /** Recipients still unfed; null when the broadcast is gone or busy. */
  unfed: number | null;
  /** Another transaction (a feeder, a pause, a cancel) holds the broadcast. */
  busy: boolean;
}

/** Feeds the broadcast's next recipients while fewer than `ahead` / 2 of its rows are pending. */
export async function broadcastFeed(db: Queryable, id: string, ahead: number, max: number): Promise<FeedResult> {
  const { rows } = await db.query<FeedResult>(
    'select fed, skipped, unfed, busy from relay.broadcast_feed($1::bigint, $2::int, $3::int)',
    [id, ahead, max],
  );
  return rows[0];
}

/**
 * Running broadcasts with recipients left to feed, oldest first (broadcasts_feeding_idx): of every
 * bot, or only of `botIds` (a worker serving the registered bots).
 */
export async function broadcastsToFeed(
  db: Queryable,
  limit: number,
  botIds?: readonly string[],
): Promise<{ id: string; bot_id: string; paid: boolean }[]> {
  const { rows } = await db.query<{ id: string; bot_id: string; paid: boolean }>(
    `select id::text as id, bot_id, paid from relay.broadcasts
      where state = 'running' and fed < staged and ($2::text[] is null or bot_id = any($2::text[]))
      order by id limit $1`,
    [limit, botIds ?? null],
  );
  return rows;
}

/** A cancelled broadcast's staged recipients are dropped: it is never fed again. Returns how many. */
export async function broadcastDropRecipients(db: Queryable, id: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `with d as (delete from relay.broadcast_recipients where broadcast_id = $1::bigint returning cardinality(chat_ids) as n)
     select coalesce(sum(n), 0)::int as n from d`,
    [id],
  );
  return rows[0].n;
}

export async function broadcastSetPlan(db: Queryable, id: string, plan: object): Promise<void> {
  await db.query('update relay.broadcasts set plan = $2, updated_at = now() where id = $1::bigint', [id, plan]);
}

export async function broadcastSetState(db: Queryable, id: string, state: StoredBroadcastState): Promise<void> {
  await db.query('update relay.broadcasts set state = $2, updated_at = now() where id = $1::bigint', [id, state]);
}

/**
 * A 403 that says the user blocked the bot, is gone or removed it (classify-response.ts chatStatusOf):
 * the chat, not the message, is the problem; relay.chat_status records it.
 */
const BLOCKED = `(o.last_status = 403 and coalesce(o.failed_reason, o.last_error, '') ~* '(bot was blocked by the user|user is deactivated|bot was kicked from)')`;

export interface BroadcastCountsRow {
  pending: number;
  paused: number;
  delivering: number;
  delivered: number;
  failed: number;
  cancelled: number;
  blocked: number;
  /** Delivered in the last minute, and how long that window really is (seconds since the first delivery, ≤ 60). */
  recent: number;
  window_s: number;
  /**
   * The broadcast as of the same snapshot as the counts (a feed between two statements would count
   * its recipients twice): its state, recipients, skipped, and the recipients not yet fed.
   */
  state: StoredBroadcastState;
  recipients: number;
  skipped: number;
  unfed: number;
}

/**
 * Counts by state from the broadcast's rows (outbound_broadcast_idx), the last minute's deliveries,
 * and the recipients not yet fed, in one statement. Undefined when there is no such broadcast.
 */
export async function broadcastCounts(db: Queryable, id: string): Promise<BroadcastCountsRow> {
  const { rows } = await db.query<BroadcastCountsRow>(
    `select count(*) filter (where o.state = 'pending')::int as pending,
            count(*) filter (where o.state = 'paused')::int as paused,
            count(*) filter (where o.state = 'delivering')::int as delivering,
            count(*) filter (where o.state = 'delivered')::int as delivered,
            count(*) filter (where o.state = 'failed' and o.failed_reason = 'cancelled')::int as cancelled,
            count(*) filter (where o.state = 'failed' and o.failed_reason is distinct from 'cancelled' and ${BLOCKED})::int as blocked,
            count(*) filter (where o.state = 'failed' and o.failed_reason is distinct from 'cancelled' and not ${BLOCKED})::int as failed,
            count(*) filter (where o.state = 'delivered' and o.delivered_at > now() - interval '60 seconds')::int as recent,
            coalesce(least(60, extract(epoch from now() - min(o.delivered_at)
                                       filter (where o.state = 'delivered' and o.delivered_at > now() - interval '60 seconds'))), 0)::float8 as window_s,
            b.state, b.recipients, b.skipped, (b.staged - b.fed) as unfed
       from relay.broadcasts b
       left join relay.outbound o on o.broadcast_id = b.id
      where b.id = $1::bigint
      group by b.id`,
    [id],
  );
  return rows[0];
}

/** Newest first, keyset-paginated by id. */
export async function broadcastList(
  db: Queryable,
  a: { limit: number; beforeId: string | null },
): Promise<BroadcastRow[]> {
  const { rows } = await db.query<BroadcastRow>(
    `select ${COLUMNS} from relay.broadcasts where ($2::bigint is null or id < $2::bigint) order by relay.broadcasts.id desc limit $1`,
    [a.limit, a.beforeId],
  );
  return rows;
}

/** pending → paused for the broadcast's rows; returns how many. */
export async function broadcastPauseRows(db: Queryable, id: string): Promise<number> {
  const r = await db.query(
    `update relay.outbound set state = 'paused', updated_at = now() where broadcast_id = $1::bigint and state = 'pending'`,
    [id],
  );
  return r.rowCount ?? 0;
}

/** paused → pending, due now. */
export async function broadcastResumeRows(db: Queryable, id: string): Promise<number> {
  const r = await db.query(
    `update relay.outbound set state = 'pending', next_attempt_at = now(), updated_at = now()
      where broadcast_id = $1::bigint and state = 'paused'`,
    [id],
  );
  return r.rowCount ?? 0;
}

/** pending or paused → failed 'cancelled'; returns their job ids (to cancel in the ledger). */
export async function broadcastCancelRows(db: Queryable, id: string): Promise<string[]> {
  const { rows } = await db.query<{ job_id: string | null }>(
    `update relay.outbound set state = 'failed', failed_reason = 'cancelled', updated_at = now()
      where broadcast_id = $1::bigint and state in ('pending', 'paused')
     returning job_id::text as job_id`,
    [id],
  );
  return rows.flatMap((r) => (r.job_id ? [r.job_id] : []));
}

/** Registers (or replaces) a named audience query: one column of chat ids, $1 = the bot id. */
export async function audienceSave(db: Queryable, a: { name: string; sql: string; description?: string | null }) {
  await db.query(
    `insert into relay.broadcast_audiences (name, sql, description) values ($1, $2, $3)
     on conflict (name) do update set sql = excluded.sql, description = excluded.description, updated_at = now()`,
    [a.name, a.sql, a.description ?? null],
  );
}

export async function audienceList(db: Queryable): Promise<{ name: string; description: string | null }[]> {
  const { rows } = await db.query<{ name: string; description: string | null }>(
    'select name, description from relay.broadcast_audiences order by name',
  );
  return rows;
}

export async function audienceExists(db: Queryable, name: string): Promise<boolean> {
  const { rows } = await db.query('select 1 from relay.broadcast_audiences where name = $1', [name]);
  return rows.length > 0;
}

export async function defaultBotId(db: Queryable): Promise<string | null> {
  const { rows } = await db.query<{ bot_id: string | null }>(
    'select bot_id from relay.outbound_settings where singleton',
  );
  return rows[0]?.bot_id ?? null;
}
