-- 0014_traceparent: OpenTelemetry trace context crosses processes through the database (issue 18).
-- Why: an update is received by a poller, handled by a worker and its reply sent by (maybe another)
-- worker; to follow it as ONE trace, the W3C `traceparent` of the span that created a row is stored
-- with the row, and the span that works on the row continues that trace. Nullable: tracing is off
-- unless configured, rows written before this migration or without a trace simply start a new one.
-- A value is only ever an id (00-<trace id>-<span id>-<flags>), never content; the length check keeps
-- a caller's garbage out (a malformed value is ignored when read: it starts a new trace).

alter table relay.inbox add column if not exists traceparent text
  check (traceparent is null or char_length(traceparent) <= 128);
alter table relay.outbound add column if not exists traceparent text
  check (traceparent is null or char_length(traceparent) <= 128);
alter table relay.captures add column if not exists traceparent text
  check (traceparent is null or char_length(traceparent) <= 128);

-- relay.enqueue_outbound gains an optional `traceparent` (the caller's trace: the sendMessage span
-- joins it). A parameter with a default cannot be added by CREATE OR REPLACE, and a second overload
-- would make every existing call ambiguous, so the function is replaced: every call that worked
-- before (positional or named arguments) works unchanged. A traceparent that is not W3C-formed is
-- ignored (stored as null), never a reason to refuse the message.
drop function if exists relay.enqueue_outbound(text, text, text, text, boolean, jsonb, text, text, text, integer, jsonb);
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
  send_options         jsonb default null,
  traceparent          text default null
) returns table (id bigint, created boolean, state text, target_chat_id text, job_id uuid)
language plpgsql as $$
declare
  r record;
  v_job uuid := gen_random_uuid();
  v_tp text := case when enqueue_outbound.traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
                     and enqueue_outbound.traceparent !~ '^ff-'
                     and enqueue_outbound.traceparent !~ '^[0-9a-f]{2}-0{32}-'
                     and enqueue_outbound.traceparent !~ '^[0-9a-f]{2}-[0-9a-f]{32}-0{16}-'
                    then enqueue_outbound.traceparent end;
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
    if v_tp is not null then
      update relay.outbound o set traceparent = v_tp where o.id = r.outbound_id;
    end if;
    perform relay.outbound_boss_job_insert(v_job, jsonb_build_object('outboundId', r.outbound_id::text, 'msgId', enqueue_outbound.msg_id));
    perform pg_notify('tg_relay_work', 'outbound.send');
  end if;
  return query select r.outbound_id, r.created, r.state, r.target_chat_id, r.job_id;
end $$;
