/**
 * All SQL of the outbound relay, one function per statement (entity-first names). Values only as
 * $n parameters. The logic that every way in shares lives in SQL functions (sql/functions/).
 */
import { Pool } from 'pg';
import type { Queryable } from '../db/pool';
import { jobsInsertSql, jobsNotCreated, QUEUES } from '../db/boss';
import { prepared, query, type Statement } from '../db/query';
import { workNotifySql } from '../queue/enqueue';
import { ALERT_COALESCE_MS_DEFAULT } from '../config/schema';
import type { OutboundMessage, OutboundState } from './message';
import type { OutboundRow } from './send-message';

export interface UpsertedRow {
  id: string;
  msgId: string;
  created: boolean;
  conflict: boolean;
  state: OutboundState;
  jobId: string | null;
  /** Null for an answer to a query (it belongs to no chat). */
  targetChatId: string | null;
}

/**
 * The rows (relay.outbound_upsert, in input order), the ledger jobs of the rows it created
 * (jobsInsertSql: the row insertJobs writes) and the workers' wake-up, in one statement: a reply
 * is enqueued in one round trip of its outcome transaction instead of three. `jobs` counts the
 * jobs written, so a missing queue is caught as insertJobs catches it. The quiet variant sends no
 * NOTIFY (EnqueueOptions.wake).
 */
const upsertStatement = (wake: boolean) =>
  prepared<UpsertedRow & { jobs: number }>(
    `with x as (
      select * from json_to_recordset($1::json) as x(n integer, msg_id text, bot_id text, chat_id text, text text, parse_mode text,
              disable_notification boolean, reply_markup jsonb, send_options jsonb, kind text, delivery text,
              source_update_id bigint, max_attempts integer, job_id uuid, method text, params jsonb, placeholders bigint[],
              lane text)
    ), u as (
      select x.n, u.* from x
      cross join lateral relay.outbound_upsert(x.msg_id, x.bot_id, x.chat_id, $2, x.text, x.parse_mode, x.disable_notification,
              x.reply_markup, x.send_options, x.kind, x.delivery, x.source_update_id, x.max_attempts, x.job_id,
              x.method, x.params, x.placeholders, x.lane) u
    ), jobs as (
      ${jobsInsertSql(`select u.job_id as id, '${QUEUES.outbound}'::text as name,
                     jsonb_build_object('outboundId', u.outbound_id::text, 'msgId', u.msg_id) as data
                from u where u.created`)}
    )
    select u.outbound_id::text as id, u.msg_id as "msgId", u.created, u.conflict, u.state, u.job_id::text as "jobId",
           u.target_chat_id as "targetChatId", (select count(*) from jobs)::int as jobs${wake ? `, ${workNotifySql('jobs')} as notified` : ''}
      from u
     order by u.n`,
  );
const UPSERT = { wake: upsertStatement(true), quiet: upsertStatement(false) };

/**
 * Upserts the messages (ids, and so each chat's send order, follow the input order) and creates
 * the ledger jobs of those it created, waking the workers at commit. Throws RELAY_ENQUEUE_FAILED
 * unless every created row got its job, as JobLedger.insertJobs does; the caller's transaction
 * then rolls back.
 */
export async function outboundUpsertMany(
  db: Queryable,
  messages: { message: OutboundMessage; jobId: string }[],
  defaultChatId: string | null,
  defaultBotId: string | null,
  wake = true,
): Promise<UpsertedRow[]> {
  if (messages.length === 0) return [];
  const items = messages.map(({ message: m, jobId }, n) => ({
    n,
    msg_id: m.msgId,
    bot_id: m.botId ?? defaultBotId,
    chat_id: m.chatId,
    text: m.text,
    parse_mode: m.parseMode,
    disable_notification: m.disableNotification,
    reply_markup: m.replyMarkup,
    send_options: m.sendOptions,
    kind: m.kind,
    delivery: m.delivery,
    source_update_id: m.sourceUpdateId,
    max_attempts: m.maxAttempts,
    job_id: jobId,
    method: m.method,
    params: m.params,
    placeholders: m.placeholders,
    lane: m.lane,
  }));
  const rows = await query(db, wake ? UPSERT.wake : UPSERT.quiet, [JSON.stringify(items), defaultChatId]);
  const created = rows.filter((r) => r.created).length;
  if ((rows[0]?.jobs ?? 0) !== created) throw jobsNotCreated(`all ${created} ${QUEUES.outbound} jobs`);
  return rows;
}

/** Stores the files of a new row (relay.outbound_uploads), in the enqueuing transaction. */
export async function outboundUploadsInsert(
  db: Queryable,
  outboundId: string,
  uploads: { part: string; filename: string; bytes: Buffer }[],
): Promise<void> {
  // one statement per file: a few files of up to 50 MB each, sent as binary parameters
  for (const u of uploads) {
    await db.query('insert into relay.outbound_uploads (outbound_id, part, filename, bytes) values ($1, $2, $3, $4)', [
      outboundId,
      u.part,
      u.filename,
      Buffer.from(u.bytes.buffer, u.bytes.byteOffset, u.bytes.byteLength),
    ]);
  }
}

/** The files of a row, to send as multipart parts. */
export async function outboundUploadsOf(
  db: Queryable,
  outboundId: string,
): Promise<{ part: string; filename: string; bytes: Buffer }[]> {
  const { rows } = await db.query<{ part: string; filename: string; bytes: Buffer }>(
    'select part, filename, bytes from relay.outbound_uploads where outbound_id = $1 order by part',
    [outboundId],
  );
  return rows;
}

/** Stores the trace context of new rows, in the enqueuing transaction. */
export async function outboundSetTraceparent(
  db: Queryable,
  items: { id: string; traceparent: string }[],
): Promise<void> {
  if (items.length === 0) return;
  await db.query(
    `update relay.outbound o set traceparent = t.traceparent
       from unnest($1::bigint[], $2::text[]) as t(id, traceparent)
      where o.id = t.id`,
    [items.map((i) => i.id), items.map((i) => i.traceparent)],
  );
}

/** Registers this deployment's bot and default chat for callers of relay.enqueue_outbound that omit them. */
export async function outboundSettingsSave(
  db: Queryable,
  s: { botId: string; defaultChatId: string | null },
): Promise<void> {
  await db.query(
    `insert into relay.outbound_settings (singleton, bot_id, default_chat_id) values (true, $1, $2)
     on conflict (singleton) do update set bot_id = excluded.bot_id, default_chat_id = excluded.default_chat_id, updated_at = now()
      where (relay.outbound_settings.bot_id, relay.outbound_settings.default_chat_id) is distinct from (excluded.bot_id, excluded.default_chat_id)`,
    [s.botId, s.defaultChatId],
  );
}

/**
 * Alerts for those of `ids` that are failed and not alerts themselves, coalesced per (bot,
 * operators' chat) in windows of `windowMs` (relay.outbound_raise_alerts): the first failure of a
 * window is alerted at once (msg_id relay.outbound_alert_msg_id(msg_id)), the others are held back
 * for the window's summary. Returns the ids of the alerts enqueued.
 */
export async function outboundRaiseAlerts(
  db: Queryable,
  ids: string[],
  opsChatId: string | null,
  windowMs: number = ALERT_COALESCE_MS_DEFAULT,
): Promise<string[]> {
  if (ids.length === 0) return [];
  // bigint ids: pg returns them as text
  const { rows } = await db.query<{ id: string }>('select relay.outbound_raise_alerts($1::bigint[], $2, $3) as id', [
    ids,
    opsChatId,
    windowMs,
  ]);
  return rows.map((r) => String(r.id));
}

/**
 * Those of `ids` (outbound rows) by bot, bots in id order: a fleet raises each bot's alerts to its
 * own operators' chat, and always takes their locks in the same order.
 */
export async function outboundIdsByBot(db: Queryable, ids: string[]): Promise<{ botId: string; ids: string[] }[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ bot_id: string; ids: string[] }>(
    `select bot_id, array_agg(id::text order by id) as ids from relay.outbound
      where id = any($1::bigint[]) group by bot_id order by bot_id`,
    [ids],
  );
  return rows.map((r) => ({ botId: r.bot_id, ids: r.ids }));
}

/**
 * Sends the summary of the alert windows that are over and hold failures back (one alert each,
 * which opens the next window): every such window, or only `window`. Returns the ids of the alerts
 * enqueued.
 */
export async function outboundAlertWindowsFlush(
  db: Queryable,
  windowMs: number,
  window?: { botId: string; chatId: string },
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>('select relay.outbound_alert_windows_flush($1, $2, $3) as id', [
    windowMs,
    window?.botId ?? null,
    window?.chatId ?? null,
  ]);
  return rows.map((r) => String(r.id));
}

/** The alert windows that are over and hold failures back. */
export async function outboundAlertWindowsDue(db: Queryable): Promise<{ botId: string; chatId: string }[]> {
  const { rows } = await db.query<{ botId: string; chatId: string }>(
    `select bot_id as "botId", chat_id as "chatId" from relay.alert_windows
      where failures > 0 and closes_at <= clock_timestamp() order by closes_at`,
  );
  return rows;
}

export interface Reservation {
  reserved: boolean;
  /** Reserved: wait this long, then send. Not reserved: try again after this long. */
  waitMs: number;
}

export async function outboundRateReserve(
  db: Queryable,
  a: {
    botId: string;
    chatId: string;
    intervalMs: number;
    burst: number;
    horizonMs: number;
    /** Bulk lane: reserve only a slot at most this far away (null: interactive, up to the horizon). */
    aheadMs?: number | null;
  },
): Promise<Reservation> {
  const rows = await query(db, reserveOn(db, RESERVE), [
    a.botId,
    a.chatId,
    a.intervalMs,
    a.burst,
    a.horizonMs,
    a.aheadMs ?? null,
  ]);
  return { reserved: rows[0].reserved === true, waitMs: Math.max(0, Number(rows[0].wait_ms)) };
}

/** A slot of the bot's paid-broadcast budget (relay.outbound_rate_reserve_paid), for a paid bulk row. */
export async function outboundRateReservePaid(
  db: Queryable,
  a: { botId: string; chatId: string; intervalMs: number; horizonMs: number },
): Promise<Reservation> {
  const rows = await query(db, reserveOn(db, RESERVE_PAID), [a.botId, a.chatId, a.intervalMs, a.horizonMs]);
  return { reserved: rows[0].reserved === true, waitMs: Math.max(0, Number(rows[0].wait_ms)) };
}

type ReserveRow = { reserved: boolean | null; wait_ms: number | null };
/**
 * A reservation on the pool is its own transaction, and it commits without waiting for the WAL
 * flush: it is the only commit of the send path that no durable state hangs on. Its row lock is
 * what serializes a bot's sends, so each waited for the one before it to reach the disk. A database
 * crash can lose only reservations that no later commit flushed, so the outcomes of their sends
 * were lost too: those messages are sent (and charged) again, or fail as ambiguous, as after any
 * crash. In a caller's transaction, that transaction's own setting holds.
 */
interface ReserveVariants {
  alone: Statement<ReserveRow>;
  inTransaction: Statement<ReserveRow>;
}
const reserveVariants = (call: string): ReserveVariants => ({
  alone: prepared(
    `select reserved, wait_ms, set_config('synchronous_commit', 'off', true) as async_commit from ${call}`,
  ),
  inTransaction: prepared(`select reserved, wait_ms from ${call}`),
});
const RESERVE = reserveVariants('relay.outbound_rate_reserve($1, $2, $3, $4, $5, $6)');
const RESERVE_PAID = reserveVariants('relay.outbound_rate_reserve_paid($1, $2, $3, $4)');
/** The pool runs a statement as its own transaction; anything else is the caller's transaction. */
const reserveOn = (db: Queryable, v: ReserveVariants) => (db instanceof Pool ? v.alone : v.inTransaction);

export async function outboundRateChargeChat(
  db: Queryable,
  a: {
    botId: string;
    chatId: string;
    chatIntervalMs: number;
    isGroup: boolean;
    groupIntervalMs: number;
    groupBurst: number;
  },
): Promise<void> {
  await db.query('select relay.outbound_rate_charge_chat($1, $2, $3, $4, $5, $6)', [
    a.botId,
    a.chatId,
    a.chatIntervalMs,
    a.isGroup,
    a.groupIntervalMs,
    a.groupBurst,
  ]);
}

/** Returns true when the 429 was taken as bot-level (the whole bot was pushed back). */
export async function outboundRatePenalize(
  db: Queryable,
  a: { botId: string; chatId: string; retryAfterMs: number; botToleranceMs: number },
): Promise<boolean> {
  const { rows } = await db.query<{ bot_level: boolean | null }>(
    'select relay.outbound_rate_penalize($1, $2, $3, $4) as bot_level',
    [a.botId, a.chatId, a.retryAfterMs, a.botToleranceMs],
  );
  return rows[0].bot_level === true;
}

// ---- the outbound.send job kind (claim store of the worker engine) -------------------------------

/**
 * True when the row aliased `a` asks Telegram for a paid broadcast (allow_paid_broadcast: jsonb
 * `true`, as a broadcast writes it); carriesPaidBroadcast (rate-limit.ts) is the same test on a row.
 */
export function carriesPaidBroadcastSql(a: string): string {
  // coalesce: a row without send_options or params would make it null, and `not null` excludes the row
  return `coalesce(${a}.send_options->>'allow_paid_broadcast' = 'true' or ${a}.params->>'allow_paid_broadcast' = 'true', false)`;
}

const NOW = (n: number) => `coalesce($${n}::timestamptz, now())`;

/**
 * Conditions under which a pending row (alias `a`) of bot `bot` (a placeholder) may be claimed, on
 * top of the engine's (pending, due; claim-sql.ts). Per-chat FIFO: only a chat's head (no earlier
 * pending or delivering row of the same (bot_id, target_chat_id), probed through
 * outbound_chat_fifo_idx) — so a later message never overtakes an earlier one, through retries,
 * 429s and replicas; a delivered or failed head releases the chat — and never while a message of
 * the chat is in flight (outbound_delivering_chat_idx; an operator's retry of a failed, earlier
 * message waits for it). With proactive rate limiting (`horizon`, the placeholder of the horizon in
 * ms) also: the chat's next_at has come, and the bot is not blocked beyond the horizon (429).
 * Answers (target_chat_id null) belong to no chat: null matches no FIFO or chat-rate probe, and they
 * skip the bot's limit too, so they are claimable whatever the chats' backlogs.
 * Lanes: the FIFO is per chat and lane (an interactive reply may overtake its chat's pending bulk
 * message, never another interactive one); one message per chat in flight holds across lanes. With
 * `bulk` (placeholders) a bulk row is claimed only while fewer than `max` bulk rows of the bot are in
 * flight, so a broadcast never fills the workers' slots that a reply needs, and only when the bot's
 * free budget is booked at most `aheadMs` ahead (the wait of the process's bulk gate: a bulk row
 * claimed earlier would only be given back). With `paidMax` (PAID_BROADCAST_RATE on) bulk rows that
 * carry allow_paid_broadcast have a bound of their own and are held back by the paid budget
 * (paid_tat, up to the horizon) instead of the free one.
 */
export function outboundClaimable(
  a: string,
  bot: string,
  horizon: string | null,
  bulk: { max: string; aheadMs: string; paidMax?: string | null } | null = null,
): string {
  const base = `${a}.bot_id = ${bot}
     and not exists (select 1 from relay.outbound p
                      where p.bot_id = ${a}.bot_id and p.target_chat_id = ${a}.target_chat_id and p.lane = ${a}.lane
                        and p.state in ('pending', 'delivering') and p.id < ${a}.id)
     and not exists (select 1 from relay.outbound d
                      where d.bot_id = ${a}.bot_id and d.target_chat_id = ${a}.target_chat_id and d.state = 'delivering')`;
  const paid = bulk?.paidMax ? carriesPaidBroadcastSql(a) : null;
  const inFlight = (cond: string) =>
    `(select count(*) from relay.outbound f
               where f.bot_id = ${bot} and f.state = 'delivering' and f.lane = 'bulk'${cond})`;
  const bound =
    bulk === null
      ? ''
      : paid === null
        ? `
     and (${a}.lane = 'interactive'
          or ${inFlight('')} < ${bulk.max})`
        : `
     and (${a}.lane = 'interactive'
          or (${paid} and ${inFlight(` and ${carriesPaidBroadcastSql('f')}`)} < ${bulk.paidMax})
          or (not ${paid} and ${inFlight(` and not ${carriesPaidBroadcastSql('f')}`)} < ${bulk.max}))`;
  if (horizon === null) return base + bound;
  const ahead = (lim: string) => `clock_timestamp() + ${lim} * interval '1 millisecond'`;
  const freeBlocked =
    bulk === null
      ? `b.tat > ${ahead(horizon)}`
      : `b.tat > ${ahead(`(case when ${a}.lane = 'bulk' then ${bulk.aheadMs}::float8 else ${horizon}::float8 end)`)}`;
  const botBlocked =
    paid === null
      ? freeBlocked
      : `(case when ${a}.lane = 'bulk' and ${paid} then b.paid_tat > ${ahead(horizon)} else ${freeBlocked} end)`;
  return `${base}${bound}
     and not exists (select 1 from relay.outbound_chat_rate r
                      where r.bot_id = ${a}.bot_id and r.chat_id = ${a}.target_chat_id and r.next_at > clock_timestamp())
     and (${a}.target_chat_id is null
          or not exists (select 1 from relay.outbound_bot_rate b
                          where b.bot_id = ${bot} and ${botBlocked}))`;
}

/** A claimed outbound row: the whole relay.outbound row (id as text) under its new claim. */
export type OutboundClaimedRow = OutboundRow & { job_id: string | null; claim_id: string };

/**
 * Which of `botIds` have outbound rows waiting or in flight: one probe of outbound_chat_fifo_idx per
 * bot in one statement, so a fleet computes the next due only for bots with work (most have none).
 */
export async function outboundBotsWithWork(db: Queryable, botIds: readonly string[]): Promise<string[]> {
  const { rows } = await db.query<{ bot_id: string }>(
    `select b.bot_id from unnest($1::text[]) as b(bot_id)
      where exists (select 1 from relay.outbound o where o.bot_id = b.bot_id and o.state in ('pending', 'delivering'))`,
    [botIds],
  );
  return rows.map((r) => r.bot_id);
}

/** How many of the oldest pending bulk rows outboundNextDueInMs looks at for the bulk lane's next due. */
export const NEXT_DUE_BULK_WINDOW = 100;

export interface NextDueArgs {
  botId: string;
  now: Date | null;
  rateLimited: boolean;
  horizonMs: number;
  /** The claim's bulk bounds (outboundClaimable); absent: bulk rows are due like interactive ones. */
  bulk?: { max: number; aheadMs: number; paidMax?: number | null } | null;
}

/**
 * Milliseconds until a row of the bot becomes claimable, 0 when one is claimable now, null when
 * none will be without something else happening first (nothing pending, or only bulk rows held by
 * the in-flight bound, which a settling bulk row's NOTIFY lifts). The same conditions as the claim,
 * lane by lane, so that a worker neither sleeps past an interactive row's due time nor spins on
 * claims that cannot take a rate-limited bulk row:
 * - interactive chat heads: every one, by a skip scan of outbound_interactive_fifo_idx (one probe
 *   per chat with interactive rows, however many chats a broadcast has pending); ready at the latest
 *   of its next_attempt_at, its chat's next_at and the bot's free budget minus the horizon;
 * - bulk chat heads among the oldest NEXT_DUE_BULK_WINDOW pending bulk rows (bounded work during a
 *   broadcast of any size; a later head is found once these are sent, and bulk may wait that long),
 *   only while its in-flight bound has room; ready when the free budget is at most the bulk gate's
 *   wait away (a paid row: the paid budget within the horizon);
 * - answers (no chat), at their next_attempt_at.
 */
export async function outboundNextDueInMs(db: Queryable, a: NextDueArgs): Promise<number | null> {
  const bulk = a.rateLimited ? (a.bulk ?? null) : null;
  const paidOn = !!bulk?.paidMax;
  const values: unknown[] = [a.botId, a.now, a.horizonMs];
  if (bulk !== null) values.push(bulk.aheadMs, bulk.max, bulk.paidMax ?? 0);
  const rows = await query(db, nextDueStatement(a.rateLimited, bulk !== null, paidOn), values);
  const ms = rows[0]?.ms;
  return ms === null || ms === undefined ? null : Math.ceil(Number(ms));
}

/** The next-due statement of each combination of limits (built and named once each). */
const nextDueStatements = new Map<string, Statement<{ ms: number | null }>>();
function nextDueStatement(rateLimited: boolean, bulkOn: boolean, paidOn: boolean) {
  const key = `${rateLimited}/${bulkOn}/${paidOn}`;
  let stmt = nextDueStatements.get(key);
  if (!stmt) nextDueStatements.set(key, (stmt = prepared(nextDueSql(rateLimited, bulkOn, paidOn))));
  return stmt;
}

function nextDueSql(rateLimited: boolean, bulkOn: boolean, paidOn: boolean): string {
  const paid = (x: string) => (paidOn ? carriesPaidBroadcastSql(x) : 'false');
  // $1 bot, $2 now, $3 horizon ms, $4 bulk ahead ms, $5 bulk max, $6 paid max
  const botFree = (lim: string) =>
    rateLimited
      ? `coalesce((select b.tat - ${lim}::float8 * interval '1 millisecond' from bot b), '-infinity')`
      : `'-infinity'`;
  const botPaid = rateLimited
    ? `coalesce((select b.paid_tat - $3::float8 * interval '1 millisecond' from bot b), '-infinity')`
    : `'-infinity'`;
  const chatNext = rateLimited ? `coalesce(r.next_at, '-infinity')` : `'-infinity'`;
  const bulkReady = !bulkOn ? `'-infinity'` : `case when h.paid then ${botPaid} else ${botFree('$4')} end`;
  const bulkRoom = !bulkOn
    ? ''
    : `and (case when h.paid then (select n from flying where paid) < $6::int else (select n from flying where not paid) < $5::int end)`;
  return `with recursive heads as (
       (select o.target_chat_id, o.state, o.next_attempt_at from relay.outbound o
         where o.bot_id = $1 and o.state in ('pending', 'delivering') and o.lane = 'interactive'
         order by o.target_chat_id, o.id limit 1)
       union all
       select x.* from heads h cross join lateral
         (select o.target_chat_id, o.state, o.next_attempt_at from relay.outbound o
           where o.bot_id = $1 and o.state in ('pending', 'delivering') and o.lane = 'interactive'
             and o.target_chat_id > h.target_chat_id
           order by o.target_chat_id, o.id limit 1) x
     )
     , bot as (select tat, paid_tat from relay.outbound_bot_rate where bot_id = $1)
     , flying as (
       select p.paid, (select count(*) from relay.outbound f
                        where f.bot_id = $1 and f.state = 'delivering' and f.lane = 'bulk' and ${paid('f')} = p.paid) as n
         from (values (true), (false)) as p(paid)
     )
     , bulk_heads as (
       select w.target_chat_id, w.next_attempt_at, ${paid('w')} as paid
         from (select o.* from relay.outbound o where o.bot_id = $1 and o.state = 'pending' and o.lane = 'bulk'
                order by o.id limit ${NEXT_DUE_BULK_WINDOW}) w
        where w.target_chat_id is not null
          and not exists (select 1 from relay.outbound p
                           where p.bot_id = $1 and p.target_chat_id = w.target_chat_id and p.lane = 'bulk'
                             and p.state in ('pending', 'delivering') and p.id < w.id)
     )
     , due as (
       select min(greatest(h.next_attempt_at, ${chatNext}, ${botFree('$3')})) as at
         from heads h
         left join relay.outbound_chat_rate r on r.bot_id = $1 and r.chat_id = h.target_chat_id
        where h.state = 'pending' and h.target_chat_id is not null
          and not exists (select 1 from relay.outbound d where d.bot_id = $1 and d.target_chat_id = h.target_chat_id and d.state = 'delivering')
       union all
       select min(greatest(h.next_attempt_at, ${chatNext}, ${bulkReady}))
         from bulk_heads h
         left join relay.outbound_chat_rate r on r.bot_id = $1 and r.chat_id = h.target_chat_id
        where not exists (select 1 from relay.outbound d where d.bot_id = $1 and d.target_chat_id = h.target_chat_id and d.state = 'delivering')
          ${bulkRoom}
       union all
       -- answers are in no chat's heads (outbound_pending_answers_idx)
       select min(o.next_attempt_at) from relay.outbound o
        where o.bot_id = $1 and o.state = 'pending' and o.target_chat_id is null
     )
     select case when min(at) is null then null  -- greatest() ignores nulls: no head must not read as "due now"
                 else greatest(0, extract(epoch from (min(at) - ${NOW(2)})) * 1000)::float8 end as ms
       from due`;
}

/** Stores Telegram's message ids of delivered rows: the first, and all of them in order (an album). */
export async function outboundSetTelegramMessageIds(
  db: Queryable,
  items: { id: string; messageId: number; messageIds?: number[] }[],
): Promise<void> {
  if (items.length === 0) return;
  await db.query(
    `update relay.outbound o set telegram_message_id = v.mid,
            telegram_message_ids = array(select jsonb_array_elements_text(v.mids)::bigint)
       from unnest($1::bigint[], $2::bigint[], $3::jsonb[]) as v(id, mid, mids) where o.id = v.id`,
    [
      items.map((i) => i.id),
      items.map((i) => i.messageId),
      items.map((i) => JSON.stringify(i.messageIds ?? [i.messageId])),
    ],
  );
}

/**
 * migrate_to_chat_id: the row and every other pending row of the same (bot, old chat) now go to the
 * new chat (ids, and so the order among them, unchanged). Returns how many rows were retargeted.
 */
export async function outboundRetarget(
  db: Queryable,
  a: { id: string; fromChatId: string; toChatId: string },
): Promise<number> {
  const { rowCount } = await db.query(
    `update relay.outbound o set target_chat_id = $3, updated_at = now()
      where o.bot_id = (select bot_id from relay.outbound where id = $1)
        and ((o.id = $1) or (o.target_chat_id = $2 and o.state = 'pending'))`,
    [a.id, a.fromChatId, a.toChatId],
  );
  return rowCount ?? 0;
}

/** at_most_once rows a stale sweep just put back to pending: their dead worker may have sent them. */
export async function outboundFailStaleAtMostOnce(db: Queryable, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `update relay.outbound set state = 'failed', failed_reason = 'ambiguous',
            last_error = 'the worker stopped during an at_most_once attempt: the message may have been sent', updated_at = now()
      where id = any($1::bigint[]) and delivery = 'at_most_once' and state = 'pending'
     returning id::text as id`,
    [ids],
  );
  return rows.map((r) => r.id);
}

/** Chats (bot, target) with a pending row after the given rows, or bulk rows among them: settling them unblocks claims. */
export async function outboundHasSuccessors(db: Queryable, ids: string[]): Promise<boolean> {
  if (ids.length === 0) return false;
  // unnamed on purpose: prepared, PostgreSQL settles on a generic plan that reads every pending row
  // of the bots (246 ms per call beside a 2,000-message backlog; 0.35 ms planned for the ids given)
  const { rows } = await db.query<{ yes: boolean }>(
    `select exists (select 1 from relay.outbound h join relay.outbound n
                      on n.bot_id = h.bot_id and n.target_chat_id = h.target_chat_id and n.state = 'pending' and n.id > h.id
                     where h.id = any($1::bigint[]))
            -- a finished bulk row frees a place of the bot's bulk bound (outboundClaimable)
            or exists (select 1 from relay.outbound h where h.id = any($1::bigint[]) and h.lane = 'bulk') as yes`,
    [ids],
  );
  return rows[0].yes === true;
}

/**
 * Rows just settled back to `pending` whose broadcast was paused or cancelled while their attempt
 * ran: pause and cancel move only rows that were not in flight, so these become `paused`, or
 * `failed` 'cancelled', here. The broadcast row is read under FOR KEY SHARE: that waits for a
 * pause/resume/cancel holding it FOR UPDATE (and makes a later one wait for this transaction), so
 * the state read here and the action's own update cannot both miss a row. Returns the rows moved
 * and their state, with the job ids of the cancelled ones (to cancel in the ledger).
 */
export async function outboundHoldForBroadcast(
  db: Queryable,
  ids: string[],
): Promise<{ id: string; state: 'paused' | 'failed'; job_id: string | null }[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: string; state: 'paused' | 'failed'; job_id: string | null }>(
    `with b as (
       select b.id, b.state from relay.broadcasts b
        where b.id in (select o.broadcast_id from relay.outbound o
                        where o.id = any($1::bigint[]) and o.state = 'pending' and o.broadcast_id is not null)
        order by b.id
        for key share of b)
     update relay.outbound o
        set state = case b.state when 'paused' then 'paused' else 'failed' end,
            failed_reason = case when b.state = 'cancelled' then 'cancelled' end,
            updated_at = now()
       from b
      where o.broadcast_id = b.id and o.id = any($1::bigint[]) and o.state = 'pending'
        and b.state in ('paused', 'cancelled')
     returning o.id::text as id, o.state, o.job_id::text as job_id`,
    [ids],
  );
  return rows;
}

/** How many 429 answers a message got (its audit rows), for OUTBOUND_MAX_429. */
export async function outboundCount429(db: Queryable, id: string | number): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `select count(*)::int as n from relay.attempts where subject = 'outbound' and subject_id = $1 and http_status = 429`,
    [id],
  );
  return rows[0].n;
}

/** A row that handed out some of the given placeholders: its state and its real ids so far. */
export interface PlaceholderOwner {
  msgId: string;
  state: OutboundState;
  placeholders: string[];
  telegramMessageIds: string[] | null;
}

/** The rows of a bot holding any of `placeholders` (outbound_placeholders_idx). */
export async function outboundPlaceholderOwners(
  db: Queryable,
  botId: string,
  placeholders: number[],
): Promise<PlaceholderOwner[]> {
  if (placeholders.length === 0) return [];
  const { rows } = await db.query<PlaceholderOwner>(
    `select o.msg_id as "msgId", o.state, o.placeholders::text[] as placeholders,
            o.telegram_message_ids::text[] as "telegramMessageIds"
       from relay.outbound o
      where o.placeholders && $2::bigint[] and o.placeholders is not null and o.bot_id = $1`,
    [botId, placeholders],
  );
  return rows;
}

// ---- relay.chat_status: chats the bot cannot reach ------------------------------------------------

/** A chat the bot cannot reach, as relay.chat_status holds it. */
export interface ChatStatusRow {
  bot_id: string;
  chat_id: string;
  status: string;
  reason: string;
  since: Date;
  updated_at: Date;
  /** `since` to the microsecond (a Date keeps milliseconds), for the next page's keyset. */
  since_key: string;
}

/**
 * Records refusals that say the chat cannot be reached. The same status again keeps `since` (the
 * chat has been unreachable since then) and refreshes the reason; another status starts anew.
 */
export async function chatStatusRecord(
  db: Queryable,
  items: { botId: string; chatId: string; status: string; reason: string }[],
): Promise<void> {
  if (items.length === 0) return;
  // one row per chat: a batch naming a chat twice would make "on conflict do update" touch it twice
  const last = new Map(items.map((i) => [`${i.botId}\u0000${i.chatId}`, i]));
  const rows = [...last.values()];
  await db.query(
    `insert into relay.chat_status as s (bot_id, chat_id, status, reason)
     select * from unnest($1::text[], $2::text[], $3::text[], $4::text[])
     on conflict (bot_id, chat_id) do update
        set since = case when s.status = excluded.status then s.since else now() end,
            status = excluded.status, reason = excluded.reason, updated_at = now()`,
    [rows.map((r) => r.botId), rows.map((r) => r.chatId), rows.map((r) => r.status), rows.map((r) => r.reason)],
  );
}

/** Chats a message was just delivered to are reachable again: their status is forgotten. */
export async function chatStatusClear(db: Queryable, chats: { botId: string; chatId: string }[]): Promise<number> {
  if (chats.length === 0) return 0;
  const { rowCount } = await db.query(
    `delete from relay.chat_status s using unnest($1::text[], $2::text[]) as c(bot_id, chat_id)
      where s.bot_id = c.bot_id and s.chat_id = c.chat_id`,
    [chats.map((c) => c.botId), chats.map((c) => c.chatId)],
  );
  return rowCount ?? 0;
}

/**
 * A page of unreachable chats, newest first (since desc, then bot and chat), after `after` (the
 * last row of the previous page). Filters combine with AND.
 */
export async function chatStatusList(
  db: Queryable,
  f: {
    status?: string;
    botId?: string;
    limit: number;
    after?: { since: string; botId: string; chatId: string };
  },
): Promise<ChatStatusRow[]> {
  const { rows } = await db.query<ChatStatusRow>(
    `select bot_id, chat_id, status, reason, since, updated_at,
            to_char(since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as since_key
       from relay.chat_status
      where ($1::text is null or status = $1) and ($2::text is null or bot_id = $2)
        and ($3::timestamptz is null or (since, bot_id, chat_id) < ($3, $4, $5))
      order by since desc, bot_id desc, chat_id desc
      limit $6`,
    [
      f.status ?? null,
      f.botId ?? null,
      f.after?.since ?? null,
      f.after?.botId ?? null,
      f.after?.chatId ?? null,
      f.limit,
    ],
  );
  return rows;
}

/** How many chats are unreachable, per status. */
export async function chatStatusCounts(db: Queryable): Promise<Record<string, number>> {
  const { rows } = await db.query<{ status: string; n: number }>(
    'select status, count(*)::int as n from relay.chat_status group by status',
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}
