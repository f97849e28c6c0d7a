-- relay.enqueue_outbound: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0004_outbound.sql; `traceparent` added by 0014_traceparent.sql, `method` and `params` with 0025_relayed_methods.sql, `lane` with 0027_outbound_lanes.sql. Edit here, never in a numbered file.
/*
 * Public: enqueue one Telegram message inside the caller's transaction. Idempotent by msg_id for
 * good: the same msg_id with the same payload returns the existing row (created = false); with a
 * different payload it raises SQLSTATE TR409 (RELAY_OUTBOUND_CONFLICT). Invalid input raises
 * TR422 (RELAY_OUTBOUND_INVALID). Creates the pg-boss job and notifies idle workers; both take
 * effect when the caller commits. Example:
 *   select * from relay.enqueue_outbound('invoice:42:paid', '-1001234567890', '<b>Paid</b>', parse_mode => 'HTML');
 * `traceparent` (W3C, optional) makes the message's sendMessage spans join the caller's trace; a
 * value that is not W3C-formed is stored as null (a new trace), never a reason to refuse the message.
 * `method` (default sendMessage) relays another Bot API call; its parameters but chat_id go in
 * `params` and text is null, e.g.
 *   select * from relay.enqueue_outbound('photo:1', '42', null, method => 'sendPhoto',
 *                                        params => '{"photo": "https://example.com/a.jpg", "caption": "hi"}');
 * `lane` (default interactive) is the priority lane: 'bulk' for broadcasts and other mass sends, which
 * use only the part of the bot's rate budget that interactive messages leave, e.g.
 *   select relay.enqueue_outbound('news:7:' || id, id, 'Our news', lane => 'bulk') from subscribers;
 */
-- The 11-argument (before 0014), 12-argument (before 0025) and 14-argument (before 0027) signatures: a parameter with a default
-- cannot be added by CREATE OR REPLACE, and a second overload would make every existing call
-- ambiguous, so they are dropped first. Every call that worked before works unchanged.
drop function if exists relay.enqueue_outbound(text, text, text, text, boolean, jsonb, text, text, text, integer, jsonb);
drop function if exists relay.enqueue_outbound(text, text, text, text, boolean, jsonb, text, text, text, integer, jsonb, text);
drop function if exists relay.enqueue_outbound(text, text, text, text, boolean, jsonb, text, text, text, integer, jsonb, text, text, jsonb);
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
  traceparent          text default null,
  method               text default 'sendMessage',
  params               jsonb default null,
  lane                 text default 'interactive'
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
    enqueue_outbound.send_options, enqueue_outbound.kind, enqueue_outbound.delivery, null, enqueue_outbound.max_attempts, v_job,
    enqueue_outbound.method, enqueue_outbound.params, null, enqueue_outbound.lane);
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
