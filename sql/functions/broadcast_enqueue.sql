-- relay.broadcast_enqueue: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created with 0029_broadcasts.sql. Edit here, never in a numbered file.
/*
 * Enqueues the message of broadcast p_broadcast_id to p_chat_ids (or, when null, to the chats its
 * registered audience query returns) at once, set-based (the library stages recipients instead:
 * relay.broadcast_stage, relay.broadcast_feed; this stays for callers that add chats directly):
 * one insert into relay.outbound and one into the job ledger, whatever the audience size. Each row's msg_id is `bcast:{id}:{chat}`, inserted with
 * `on conflict (msg_id) do nothing`, so calling it again (a retried request, chunks that overlap)
 * enqueues nothing twice. Rows are in the bulk lane. Chats that are not an integer chat id or
 * @channelusername, and chats relay.chat_status marks blocked, deactivated or kicked (the user's
 * choices; unless the broadcast has include_blocked), are skipped and counted in relay.broadcasts.skipped. Returns what this call added.
 *
 * Ordering: relay.outbound_upsert locks each chat so a chat's ids follow commit order; a broadcast
 * cannot take one lock per chat (100,000 advisory locks exceed the lock table), so broadcasts of a
 * bot are serialised with each other by one lock instead. Against an interactive message committed
 * meanwhile, a broadcast row may be sent after it (lanes are ordered within themselves only); it is
 * never sent while another row of its chat is in flight (the claim's head rule).
 */
create or replace function relay.broadcast_enqueue(p_broadcast_id bigint, p_chat_ids text[] default null)
returns table (enqueued integer, skipped integer)
language plpgsql as $$
declare
  b relay.broadcasts%rowtype;
  v_audience text;
  v_chats text[] := p_chat_ids;
  v_sha text;
  v_count integer;
  v_total integer;
  v_valid integer;
  v_eligible integer;
  v_ids bigint[];
  v_msg_ids text[];
  v_jobs uuid[];
begin
  select * into b from relay.broadcasts x where x.id = p_broadcast_id for update;
  if not found then
    raise exception using errcode = 'TR422', message = format('RELAY_BROADCAST_NOT_FOUND: broadcast %s does not exist', p_broadcast_id);
  end if;
  perform pg_advisory_xact_lock(hashtext('relay.outbound bulk'), hashtext(b.bot_id));

  if v_chats is null then
    select a.sql into v_audience from relay.broadcast_audiences a where a.name = b.audience->>'name';
    if v_audience is null then
      raise exception using errcode = 'TR422', message = format('RELAY_BROADCAST_INVALID: no audience named "%s" is registered', left(b.audience->>'name', 64));
    end if;
    execute format('select array_agg(x::text) from (%s) as q(x)', v_audience) into v_chats using b.bot_id;
    v_chats := coalesce(v_chats, '{}');
  end if;

  select f.payload_sha256, f.message_count into v_sha, v_count from relay.broadcast_row_fields(b) f;

  create temporary table if not exists broadcast_chats (chat text primary key) on commit drop;
  truncate broadcast_chats;
  insert into broadcast_chats (chat)
  select n from (
    select case when c ~ '^-?[0-9]{1,18}$' and c::bigint <> 0 then (c::bigint)::text
                when c ~ '^@[A-Za-z0-9_]{4,32}$' then c end as n
      from unnest(v_chats) as u(c)) v
   where n is not null
  on conflict do nothing;
  get diagnostics v_valid = row_count;
  select count(distinct c) into v_total from unnest(v_chats) as u(c);
  if not b.include_blocked then
    delete from broadcast_chats c using relay.chat_status s
     where s.bot_id = b.bot_id and s.chat_id = c.chat and s.status in ('blocked', 'deactivated', 'kicked');
  end if;
  select count(*) into v_eligible from broadcast_chats;

  with ins as (
    insert into relay.outbound as o (msg_id, bot_id, chat_id, target_chat_id, text, parse_mode, disable_notification,
                                     reply_markup, send_options, kind, delivery, payload_sha256, method, params,
                                     message_count, job_id, broadcast_id, state, lane)
    select 'bcast:' || b.id || ':' || c.chat, b.bot_id, c.chat, c.chat, b.text, b.parse_mode, b.disable_notification,
           b.reply_markup, b.send_options, 'message', 'at_least_once', v_sha, b.method, b.params,
           v_count, gen_random_uuid(), b.id, case when b.state = 'paused' then 'paused' else 'pending' end, 'bulk'
      from broadcast_chats c
     order by c.chat
    on conflict (msg_id) do nothing
    returning o.id, o.msg_id, o.job_id
  )
  select array_agg(ins.id), array_agg(ins.msg_id), array_agg(ins.job_id) into v_ids, v_msg_ids, v_jobs from ins;

  if v_ids is not null then
    perform relay.outbound_boss_jobs_insert(v_jobs,
      (select array_agg(jsonb_build_object('outboundId', i::text, 'msgId', m)) from unnest(v_ids, v_msg_ids) as x(i, m)));
    perform pg_notify('tg_relay_work', 'outbound.send');
  end if;

  update relay.broadcasts x
     set recipients = x.recipients + coalesce(cardinality(v_ids), 0),
         skipped = x.skipped + (v_total - v_eligible),
         updated_at = now()
   where x.id = b.id;
  return query select coalesce(cardinality(v_ids), 0), v_total - v_eligible;
end $$;
