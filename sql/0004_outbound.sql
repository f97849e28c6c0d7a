-- 0004_outbound: the outbound relay's SQL surface.
-- Why: "any service in any language" enqueues Telegram messages inside its own transaction, so the
-- idempotency rule (msg_id unique for good; same payload → the existing row, different payload →
-- conflict), the validation and the pg-boss job that wakes a worker must live in the database, not
-- only in TypeScript. The TypeScript library (libs/outbound) goes through the same upsert function,
-- so all three ways in share one rule. The fleet-wide rate-limit state lives here too: every worker
-- replica reserves send slots in these rows, so the fleet together stays under Telegram's limits
-- without any extra service.
--
-- Superseded: every function below is now defined by its own file in sql/functions/ (one function a
-- file, re-applied by `tg-relay migrate` by checksum after the numbered migrations), and that file
-- is the one that runs. The bodies here are kept because applied migrations are never edited beyond
-- comments; read sql/functions/ for the current rules. Unchanged since: outbound_normalize_chat,
-- outbound_normalize_parse_mode, outbound_lock_chat, outbound_rate_reserve, outbound_rate_penalize.
-- Changed since (the bodies here are stale): outbound_upsert, outbound_boss_job_insert,
-- enqueue_outbound, outbound_raise_alerts, outbound_rate_charge_chat.

-- Other sendMessage parameters, passed to Telegram verbatim (reply_parameters, message_thread_id,
-- link_preview_options, entities, protect_content…). Handler replies need them (a reply inside a
-- forum topic must carry message_thread_id). Part of the payload hash.
alter table relay.outbound add column if not exists send_options jsonb;

-- Defaults for callers that omit them (the SQL function is called by services that know neither the
-- bot id nor the operators' chat). Written by every worker at start from its configuration
-- (TELEGRAM_BOT_TOKEN's bot id, OPS_CHAT_ID). One row.
create table relay.outbound_settings (
  singleton        boolean primary key default true check (singleton),
  bot_id           text not null,
  default_chat_id  text,                                   -- OPS_CHAT_ID: chat of messages enqueued without chat_id, and of alerts
  updated_at       timestamptz not null default now()
);

-- Fleet-wide send pacing per bot: GCRA (a token bucket kept as one time). A send may start at
-- tat - burst tolerance; reserving it moves tat one emission interval on. Times are the database's
-- clock, so replicas on different hosts agree.
create table relay.outbound_bot_rate (
  bot_id      text primary key,
  tat         timestamptz not null default '-infinity',    -- theoretical arrival time of the next send
  last_429_at      timestamptz,                            -- last 429 answered to any chat of this bot
  last_429_chat_id text,                                   --   and its chat (two chats within the window → bot-level limit)
  updated_at  timestamptz not null default now()
);

-- Per chat: when its next message may start (1/s per chat; 20/min per group as a GCRA in group_tat;
-- pushed back by a 429's retry_after). Charged when an attempt ends: one message per chat is in
-- flight at a time (per-chat FIFO), so the end of an attempt is a safe upper bound of its arrival.
create table relay.outbound_chat_rate (
  bot_id      text not null,
  chat_id     text not null,                               -- target_chat_id
  next_at     timestamptz not null default '-infinity',    -- the chat's next message may start then
  group_tat   timestamptz,                                 -- groups and channels: 20/min bucket
  updated_at  timestamptz not null default now(),
  primary key (bot_id, chat_id)
);

-- The claim takes due chat heads oldest message first (id order): a head back from a retry goes
-- before later messages of other chats instead of behind the whole backlog (ordering by
-- next_attempt_at starved retried chats until the backlog drained; measured with bench/outbound.ts
-- and 10% faults: waits of 5-49 s after a 50 ms backoff).
create index if not exists outbound_pending_bot_id_idx on relay.outbound (bot_id, id) where state = 'pending';
-- At most one message per chat in flight, whatever the ids: a failed message an operator retries
-- (lower id) must wait while a later one of its chat is being sent. Tiny: only in-flight rows.
create index if not exists outbound_delivering_chat_idx on relay.outbound (bot_id, target_chat_id) where state = 'delivering';

-- ---------------------------------------------------------------------------------------------
-- Validation and normalisation shared by every way in. Raises SQLSTATE TR422 with a message that
-- starts with RELAY_OUTBOUND_INVALID and names the field. Chat ids: an integer (normalised: no
-- leading zeros or spaces) or @channelusername; parse modes case-insensitive, stored canonical.
-- ---------------------------------------------------------------------------------------------
create or replace function relay.outbound_normalize_chat(p_chat text, p_field text) returns text
language plpgsql immutable as $$
declare
  v text := btrim(p_chat);
begin
  if v ~ '^-?[0-9]{1,18}$' then
    if v::bigint = 0 then
      raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: %s must be a non-zero integer or @channelusername', p_field);
    end if;
    return (v::bigint)::text;
  end if;
  if v ~ '^@[A-Za-z0-9_]{4,32}$' then
    return v;
  end if;
  raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: %s must be an integer chat id or @channelusername (5-32 characters), got "%s"', p_field, left(p_chat, 40));
end $$;

create or replace function relay.outbound_normalize_parse_mode(p_parse_mode text) returns text
language plpgsql immutable as $$
begin
  if p_parse_mode is null or btrim(p_parse_mode) = '' then return null; end if;
  case lower(btrim(p_parse_mode))
    when 'markdownv2' then return 'MarkdownV2';
    when 'html' then return 'HTML';
    when 'markdown' then return 'Markdown';
    else raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: parse_mode must be MarkdownV2, HTML or Markdown, got "%s"', left(p_parse_mode, 40));
  end case;
end $$;

/*
 * Serialises the enqueues of one chat until the calling transaction ends, so that a chat's ids are
 * assigned in commit order (see relay.outbound_upsert). Two transactions that enqueue to the same
 * chats in opposite orders can deadlock; PostgreSQL then aborts one of them (SQLSTATE 40P01), which
 * its caller retries.
 */
create or replace function relay.outbound_lock_chat(p_bot_id text, p_chat_id text) returns void
language sql as $$
  select pg_advisory_xact_lock(hashtext('relay.outbound chat'), hashtext(p_bot_id || ':' || p_chat_id));
$$;

/*
 * The idempotent insert behind every way in. Does not create the pg-boss job (the caller does:
 * relay.enqueue_outbound below, or the TypeScript library through pg-boss's own insert).
 * Returns the row and whether it was created here; `conflict` is true (and nothing is written) when
 * msg_id exists with a different payload, so a TypeScript caller can raise a typed error without
 * aborting its transaction. p_chat_id null → p_default_chat_id → relay.outbound_settings.
 * The payload hash covers what the caller asked for (the requested chat, not the resolved default),
 * so a retry of the same request is the same payload even if OPS_CHAT_ID changed in between.
 */
create or replace function relay.outbound_upsert(
  p_msg_id               text,
  p_bot_id               text,
  p_chat_id              text,
  p_default_chat_id      text,
  p_text                 text,
  p_parse_mode           text,
  p_disable_notification boolean,
  p_reply_markup         jsonb,
  p_send_options         jsonb,
  p_kind                 text,
  p_delivery             text,
  p_source_update_id     bigint,
  p_max_attempts         integer,
  p_job_id               uuid
) returns table (outbound_id bigint, msg_id text, created boolean, conflict boolean, state text, job_id uuid, target_chat_id text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_bot text;
  v_chat text;
  v_target text;
  v_parse_mode text;
  v_kind text := coalesce(p_kind, 'message');
  v_delivery text := coalesce(p_delivery, 'at_least_once');
  v_options jsonb := p_send_options;
  v_sha text;
  v_id bigint;
  r record;
begin
  if p_msg_id is null or char_length(p_msg_id) not between 1 and 256 then
    raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: msg_id must be 1..256 characters';
  end if;
  if p_text is null or char_length(p_text) not between 1 and 4096 then
    raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: text must be 1..4096 characters, got %s', coalesce(char_length(p_text), 0));
  end if;
  if p_text !~ '\S' then
    raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: text must contain a visible character (Telegram rejects blank text)';
  end if;
  if v_kind not in ('message', 'reply', 'alert') then
    raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: kind must be message, reply or alert, got "%s"', left(v_kind, 40));
  end if;
  if v_delivery not in ('at_least_once', 'at_most_once') then
    raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: delivery must be at_least_once or at_most_once, got "%s"', left(v_delivery, 40));
  end if;
  if p_reply_markup is not null and jsonb_typeof(p_reply_markup) <> 'object' then
    raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: reply_markup must be a JSON object';
  end if;
  if v_options is not null then
    if jsonb_typeof(v_options) <> 'object' then
      raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: send_options must be a JSON object';
    end if;
    if v_options ?| array['chat_id', 'text', 'parse_mode', 'disable_notification', 'reply_markup'] then
      raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: send_options must not repeat chat_id, text, parse_mode, disable_notification or reply_markup (they have their own fields)';
    end if;
    if v_options = '{}'::jsonb then v_options := null; end if;
  end if;
  if p_max_attempts is not null and p_max_attempts not between 1 and 1000 then
    raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: max_attempts must be 1..1000';
  end if;
  v_parse_mode := relay.outbound_normalize_parse_mode(p_parse_mode);

  select s.bot_id, s.default_chat_id into r from relay.outbound_settings s where s.singleton;
  v_bot := coalesce(nullif(btrim(p_bot_id), ''), r.bot_id);
  if v_bot is null then
    raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: bot_id not given and no default bot registered (start a tg-relay worker once, or pass bot_id)';
  end if;
  if nullif(btrim(p_chat_id), '') is not null then
    v_chat := relay.outbound_normalize_chat(p_chat_id, 'chat_id');
    v_target := v_chat;
  else
    v_chat := null;
    v_target := coalesce(nullif(btrim(p_default_chat_id), ''), r.default_chat_id);
    if v_target is null then
      raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: chat_id not given and no default chat configured (OPS_CHAT_ID)';
    end if;
    v_target := relay.outbound_normalize_chat(v_target, 'default chat (OPS_CHAT_ID)');
  end if;

  -- Per-chat FIFO is id order, and workers claim a chat's head among *committed* rows. An id taken by
  -- a transaction that commits after a higher id of the same chat was committed (and maybe already
  -- claimed) would let the later message go first and put two messages of one chat in flight (found
  -- by the soak: a handler reply committing after a message enqueued meanwhile). So the ids of one
  -- chat are handed out one transaction at a time: this lock is held until the caller's commit.
  perform relay.outbound_lock_chat(v_bot, v_target);

  -- jsonb's text form is canonical (keys sorted), so equal payloads hash equally whatever the key order.
  v_sha := encode(sha256(convert_to(jsonb_build_object(
    'bot_id', v_bot, 'chat_id', v_chat, 'text', p_text, 'parse_mode', v_parse_mode,
    'disable_notification', coalesce(p_disable_notification, false), 'reply_markup', p_reply_markup,
    'send_options', v_options, 'kind', v_kind, 'delivery', v_delivery)::text, 'UTF8')), 'hex');

  insert into relay.outbound as o (msg_id, bot_id, chat_id, target_chat_id, text, parse_mode, disable_notification, reply_markup,
                                   send_options, kind, delivery, payload_sha256, source_update_id, max_attempts, job_id)
  values (p_msg_id, v_bot, v_target, v_target, p_text, v_parse_mode, coalesce(p_disable_notification, false), p_reply_markup,
          v_options, v_kind, v_delivery, v_sha, p_source_update_id, p_max_attempts, p_job_id)
  on conflict (msg_id) do nothing
  returning o.id into v_id;

  if v_id is not null then
    return query select v_id, p_msg_id, true, false, 'pending'::text, p_job_id, v_target;
    return;
  end if;

  -- Exists (committed, or committed by a concurrent transaction we waited for).
  select o.id, o.payload_sha256, o.state, o.job_id, o.target_chat_id into r from relay.outbound o where o.msg_id = p_msg_id;
  return query select r.id, p_msg_id, false, r.payload_sha256 <> v_sha, r.state, r.job_id, r.target_chat_id;
end $$;

/*
 * Creates the pg-boss job of an outbound row: the same row pg-boss 10.4.2's own insert
 * (node_modules/pg-boss/src/plans.js insertJobs, called by manager.insert) writes for
 * `insert([{ id, name: 'outbound.send', data, retryLimit: 0 }])` on an instance without
 * constructor-level expiry/retention/retry defaults (libs/db/boss.ts createBoss): the queue's
 * expire_seconds / retention_minutes / retry_* / policy / dead_letter, else pg-boss's fallbacks.
 * Why not pg-boss's API: pg-boss has no SQL API and this function must work for callers without
 * Node. Measured rather than assumed: test/integration/outbound/enqueue.test.ts creates one job
 * through boss.insert and one through this function and compares every column but id/data/times.
 * Re-check that test when upgrading pg-boss.
 */
create or replace function relay.outbound_boss_job_insert(p_job_id uuid, p_data jsonb) returns void
language plpgsql as $$
declare
  v_rows integer;
begin
  insert into pgboss.job (id, name, data, priority, start_after, singleton_key, singleton_on, dead_letter,
                          expire_in, keep_until, retry_limit, retry_delay, retry_backoff, policy)
  select p_job_id, q.name, p_data, 0, now(), null, null, q.dead_letter,
         case when q.expire_seconds is not null then q.expire_seconds * interval '1s' else interval '15 minutes' end,
         now() + cast(coalesce((q.retention_minutes * 60)::text, '14 days') as interval),
         0,
         case when coalesce(q.retry_backoff, false) then greatest(q.retry_delay, 1) else coalesce(q.retry_delay, 0) end,
         coalesce(q.retry_backoff, false),
         q.policy
    from pgboss.queue q
   where q.name = 'outbound.send'
  on conflict do nothing;
  get diagnostics v_rows = row_count;
  if v_rows <> 1 then
    raise exception using errcode = 'TR500', message = 'RELAY_ENQUEUE_FAILED: pg-boss queue outbound.send is missing (run tg-relay migrate)';
  end if;
end $$;

/*
 * Public: enqueue one Telegram message inside the caller's transaction. Idempotent by msg_id for
 * good: the same msg_id with the same payload returns the existing row (created = false); with a
 * different payload it raises SQLSTATE TR409 (RELAY_OUTBOUND_CONFLICT). Invalid input raises
 * TR422 (RELAY_OUTBOUND_INVALID). Creates the pg-boss job and notifies idle workers; both take
 * effect when the caller commits. Example:
 *   select * from relay.enqueue_outbound('invoice:42:paid', '-1001234567890', '<b>Paid</b>', parse_mode => 'HTML');
 */
create or replace function relay.enqueue_outbound(
  msg_id               text,
  chat_id              text,
  text                 text,
  parse_mode           text default null,
  disable_notification boolean default false,
  reply_markup         jsonb default null,
  kind                 text default 'message',
  delivery             text default 'at_least_once',
  bot_id               text default null,
  max_attempts         integer default null,
  send_options         jsonb default null
) returns table (id bigint, created boolean, state text, target_chat_id text, job_id uuid)
language plpgsql as $$
declare
  r record;
  v_job uuid := gen_random_uuid();
begin
  select * into r from relay.outbound_upsert(enqueue_outbound.msg_id, enqueue_outbound.bot_id, enqueue_outbound.chat_id, null,
    enqueue_outbound.text, enqueue_outbound.parse_mode, enqueue_outbound.disable_notification, enqueue_outbound.reply_markup,
    enqueue_outbound.send_options, enqueue_outbound.kind, enqueue_outbound.delivery, null, enqueue_outbound.max_attempts, v_job);
  if r.conflict then
    raise exception using errcode = 'TR409',
      message = format('RELAY_OUTBOUND_CONFLICT: msg_id "%s" already exists with a different payload', left(enqueue_outbound.msg_id, 100)),
      detail = format('existing outbound id %s, state %s', r.outbound_id, r.state);
  end if;
  if r.created then
    perform relay.outbound_boss_job_insert(v_job, jsonb_build_object('outboundId', r.outbound_id::text, 'msgId', enqueue_outbound.msg_id));
    perform pg_notify('tg_relay_work', 'outbound.send');
  end if;
  return query select r.outbound_id, r.created, r.state, r.target_chat_id, r.job_id;
end $$;

/*
 * Alerts for failed messages: one kind=alert message to the operators' chat per failed message,
 * msg_id `alert:<msg_id>` (insert-if-absent: retried or redelivered failures never raise a second
 * one). Loop guard: a failed alert never raises an alert. Runs in the transaction that marks the
 * rows failed. No message text in the alert (user data), only ids and Telegram's description.
 * Returns the ids of the alerts created.
 */
create or replace function relay.outbound_raise_alerts(p_ids bigint[], p_ops_chat_id text) returns setof bigint
language plpgsql as $$
declare
  f record;
  v_chat text;
  v_job uuid;
  v_id bigint;
  v_text text;
begin
  v_chat := coalesce(nullif(btrim(p_ops_chat_id), ''), (select s.default_chat_id from relay.outbound_settings s where s.singleton));
  if v_chat is null then return; end if;
  v_chat := relay.outbound_normalize_chat(v_chat, 'OPS_CHAT_ID');
  for f in
    select o.* from relay.outbound o where o.id = any(p_ids) and o.state = 'failed' and o.kind <> 'alert' order by o.id
  loop
    v_text := left(format(E'tg-relay: outbound message failed\nmsg_id: %s\nchat: %s%s\nkind: %s, delivery: %s, attempts: %s\nreason: %s',
                          f.msg_id, f.chat_id,
                          case when f.target_chat_id <> f.chat_id then format(' (migrated to %s)', f.target_chat_id) else '' end,
                          f.kind, f.delivery, f.attempts, coalesce(f.failed_reason, f.last_error, 'unknown')), 4096);
    v_job := gen_random_uuid();
    v_id := null;
    perform relay.outbound_lock_chat(f.bot_id, v_chat); -- ids of the operators' chat in commit order too
    insert into relay.outbound as o (msg_id, bot_id, chat_id, target_chat_id, text, kind, delivery, payload_sha256, job_id)
    values (left('alert:' || f.msg_id, 256), f.bot_id, v_chat, v_chat, v_text, 'alert', 'at_least_once',
            encode(sha256(convert_to(v_text, 'UTF8')), 'hex'), v_job)
    on conflict (msg_id) do nothing
    returning o.id into v_id;
    if v_id is not null then
      perform relay.outbound_boss_job_insert(v_job, jsonb_build_object('outboundId', v_id::text, 'msgId', 'alert:' || f.msg_id));
      perform pg_notify('tg_relay_work', 'outbound.send');
      return next v_id;
    end if;
  end loop;
end $$;

-- ---------------------------------------------------------------------------------------------
-- Rate limiting (see docs/outbound.md). All times are clock_timestamp() of the database.
-- ---------------------------------------------------------------------------------------------

/*
 * Reserves the bot's next send slot for a message to p_chat_id. The slot is the later of now and the
 * bot's earliest allowed time (tat - (burst-1)·interval); reserving moves tat to slot + interval.
 * Nothing is reserved when the chat is not ready by then (its next_at is later) or the slot is more
 * than p_horizon_ms away: `reserved` is false and `wait_ms` says when to try again.
 * The bot row is locked only for this statement: reservations of all replicas queue on it.
 */
create or replace function relay.outbound_rate_reserve(
  p_bot_id text, p_chat_id text, p_interval_ms float8, p_burst integer, p_horizon_ms float8
) returns table (reserved boolean, wait_ms float8)
language plpgsql as $$
declare
  v_tat timestamptz;
  v_now timestamptz;
  v_slot timestamptz;
  v_chat_next timestamptz;
  v_tau interval := greatest(p_burst - 1, 0) * p_interval_ms * interval '1 millisecond';
begin
  insert into relay.outbound_bot_rate (bot_id) values (p_bot_id) on conflict do nothing;
  select b.tat into v_tat from relay.outbound_bot_rate b where b.bot_id = p_bot_id for update;
  v_now := clock_timestamp();
  v_slot := greatest(v_now, v_tat - v_tau);
  select c.next_at into v_chat_next from relay.outbound_chat_rate c where c.bot_id = p_bot_id and c.chat_id = p_chat_id;
  if v_chat_next is not null and v_chat_next > v_slot then
    return query select false, (extract(epoch from (v_chat_next - v_now)) * 1000)::float8;
    return;
  end if;
  if v_slot - v_now > p_horizon_ms * interval '1 millisecond' then
    return query select false, (extract(epoch from (v_slot - v_now)) * 1000)::float8;
    return;
  end if;
  update relay.outbound_bot_rate b set tat = greatest(v_tat, v_slot) + p_interval_ms * interval '1 millisecond', updated_at = v_now
   where b.bot_id = p_bot_id;
  return query select true, (extract(epoch from (v_slot - v_now)) * 1000)::float8;
end $$;

/*
 * Books the end of one send attempt to a chat (any outcome but 429): its next message may start
 * p_chat_interval_ms later; a group/channel also charges its 20/min GCRA (group_tat) and waits for
 * it. Charged at the end of the attempt, which is never earlier than the request reached Telegram.
 */
create or replace function relay.outbound_rate_charge_chat(
  p_bot_id text, p_chat_id text, p_chat_interval_ms float8, p_is_group boolean, p_group_interval_ms float8, p_group_burst integer
) returns timestamptz
language plpgsql as $$
declare
  v_now timestamptz := clock_timestamp();
  v_gtat timestamptz;
  v_next timestamptz;
  c record;
begin
  insert into relay.outbound_chat_rate (bot_id, chat_id) values (p_bot_id, p_chat_id) on conflict do nothing;
  select * into c from relay.outbound_chat_rate r where r.bot_id = p_bot_id and r.chat_id = p_chat_id for update;
  v_next := greatest(c.next_at, v_now + p_chat_interval_ms * interval '1 millisecond');
  if p_is_group then
    v_gtat := greatest(coalesce(c.group_tat, v_now), v_now) + p_group_interval_ms * interval '1 millisecond';
    v_next := greatest(v_next, v_gtat - greatest(p_group_burst - 1, 0) * p_group_interval_ms * interval '1 millisecond');
  else
    v_gtat := c.group_tat;
  end if;
  update relay.outbound_chat_rate r set next_at = v_next, group_tat = v_gtat, updated_at = v_now
   where r.bot_id = p_bot_id and r.chat_id = p_chat_id;
  return v_next;
end $$;

/*
 * A 429 for a send to p_chat_id: the chat may not send before now + retry_after. Telegram does not
 * say which limit was hit; when a 429 for another chat of the same bot came within the last
 * max(retry_after, 1 s), the limit is taken to be the bot's and the whole bot waits too.
 * Returns true when the bot was pushed back.
 */
create or replace function relay.outbound_rate_penalize(
  p_bot_id text, p_chat_id text, p_retry_after_ms float8, p_bot_burst_tolerance_ms float8
) returns boolean
language plpgsql as $$
declare
  v_now timestamptz := clock_timestamp();
  v_until timestamptz := clock_timestamp() + p_retry_after_ms * interval '1 millisecond';
  v_window interval := greatest(p_retry_after_ms, 1000) * interval '1 millisecond';
  b record;
  v_bot_level boolean;
begin
  insert into relay.outbound_chat_rate as r (bot_id, chat_id, next_at) values (p_bot_id, p_chat_id, v_until)
  on conflict (bot_id, chat_id) do update set next_at = greatest(r.next_at, excluded.next_at), updated_at = v_now;
  insert into relay.outbound_bot_rate (bot_id) values (p_bot_id) on conflict do nothing;
  select * into b from relay.outbound_bot_rate r where r.bot_id = p_bot_id for update;
  v_bot_level := b.last_429_at is not null and b.last_429_at > v_now - v_window and b.last_429_chat_id is distinct from p_chat_id;
  update relay.outbound_bot_rate r
     set last_429_at = v_now, last_429_chat_id = p_chat_id, updated_at = v_now,
         tat = case when v_bot_level then greatest(r.tat, v_until + p_bot_burst_tolerance_ms * interval '1 millisecond') else r.tat end
   where r.bot_id = p_bot_id;
  return v_bot_level;
end $$;
