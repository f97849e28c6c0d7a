-- relay.broadcast_feed: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created with 0030_broadcast_recipients.sql. Edit here, never in a numbered file.
/*
 * Feeds broadcast p_broadcast_id: turns its next staged recipients (relay.broadcast_recipients,
 * from the cursor relay.broadcasts.fed on) into outbound rows `bcast:{id}:{chat}` in the bulk lane
 * and their ledger jobs, deletes the chunks fed to their end and advances the cursor, all in the
 * caller's transaction. So a crash or rollback anywhere feeds nothing, and a commit feeds each recipient once.
 *
 * Pacing: p_ahead is how many of its rows the broadcast should have waiting (about a minute of
 * sending). Nothing is fed while its pending rows exceed half of it; else up to p_ahead minus them,
 * at most p_max. Counted per broadcast, not per bot: a second broadcast of a bot starts at once and
 * shares the lane with the first (the claim takes bulk rows by id) instead of waiting for all of it. A chat relay.chat_status has marked blocked, deactivated or kicked since the
 * broadcast was created is not fed (unless include_blocked): it moves from recipients to skipped.
 *
 * Concurrency: the broadcast's row is locked (SKIP LOCKED: a broadcast another feeder, a pause or a
 * cancel holds is left alone: busy is true) and broadcasts of a bot are fed one at a time under
 * the bulk lock that relay.broadcast_enqueue takes (a chat's bulk rows get ids in commit order).
 * Only a running broadcast is fed: paused ones wait, cancelled ones have no recipients left.
 * Returns the rows inserted, the chats skipped, the recipients still unfed, and busy.
 */
create or replace function relay.broadcast_feed(p_broadcast_id bigint, p_ahead integer, p_max integer default 2000)
returns table (fed integer, skipped integer, unfed integer, busy boolean)
language plpgsql as $$
declare
  b relay.broadcasts%rowtype;
  f record;
  v_backlog integer;
  v_n integer;
  v_taken integer;
  v_ok integer;
  v_ids bigint[];
  v_msg_ids text[];
  v_jobs uuid[];
begin
  select * into b from relay.broadcasts x where x.id = p_broadcast_id for update skip locked;
  if not found then
    return query select 0, 0, null::integer, exists (select 1 from relay.broadcasts x where x.id = p_broadcast_id);
    return;
  end if;
  if b.state <> 'running' or b.fed >= b.staged then
    return query select 0, 0, b.staged - b.fed, false;
    return;
  end if;
  perform pg_advisory_xact_lock(hashtext('relay.outbound bulk'), hashtext(b.bot_id));

  select count(*) into v_backlog from (
    select 1 from relay.outbound o
     where o.broadcast_id = b.id and o.state = 'pending'
     limit greatest(p_ahead, 0)) x;
  v_n := least(greatest(p_max, 0), p_ahead - v_backlog, b.staged - b.fed);
  if v_backlog * 2 > p_ahead or v_n <= 0 then
    return query select 0, 0, b.staged - b.fed, false;
    return;
  end if;

  f := relay.broadcast_row_fields(b);
  with taken as (
    select r.chunk * 1000 + u.ord as seq, u.chat_id
      from relay.broadcast_recipients r, unnest(r.chat_ids) with ordinality as u(chat_id, ord)
     where r.broadcast_id = b.id and r.chunk between b.fed / 1000 and (b.fed + v_n - 1) / 1000
       and r.chunk * 1000 + u.ord > b.fed and r.chunk * 1000 + u.ord <= b.fed + v_n
  ), used_up as (
    -- chunks fed to their end (a data-modifying WITH runs whether read or not): what is left is still to feed
    delete from relay.broadcast_recipients r
     where r.broadcast_id = b.id and r.chunk <= (b.fed + v_n - 1) / 1000
       and r.chunk * 1000 + cardinality(r.chat_ids) <= b.fed + v_n
  ), ok as (
    select t.seq, t.chat_id from taken t
     where b.include_blocked or not exists (
             select 1 from relay.chat_status s
              where s.bot_id = b.bot_id and s.chat_id = t.chat_id and s.status in ('blocked', 'deactivated', 'kicked'))
  ), ins as (
    insert into relay.outbound as o (msg_id, bot_id, chat_id, target_chat_id, text, parse_mode, disable_notification,
                                     reply_markup, send_options, kind, delivery, payload_sha256, method, params,
                                     message_count, job_id, broadcast_id, state, lane)
    select 'bcast:' || b.id || ':' || ok.chat_id, b.bot_id, ok.chat_id, ok.chat_id, b.text, b.parse_mode,
           b.disable_notification, b.reply_markup, b.send_options, 'message', 'at_least_once', f.payload_sha256,
           b.method, b.params, f.message_count, gen_random_uuid(), b.id, 'pending', 'bulk'
      from ok
     order by ok.seq
    on conflict (msg_id) do nothing
    returning o.id, o.msg_id, o.job_id
  )
  select (select count(*) from taken), (select count(*) from ok),
         (select array_agg(ins.id) from ins), (select array_agg(ins.msg_id) from ins), (select array_agg(ins.job_id) from ins)
    into v_taken, v_ok, v_ids, v_msg_ids, v_jobs;

  if v_ids is not null then
    perform relay.outbound_boss_jobs_insert(v_jobs,
      (select array_agg(jsonb_build_object('outboundId', i::text, 'msgId', m)) from unnest(v_ids, v_msg_ids) as x(i, m)));
    perform pg_notify('tg_relay_work', 'outbound.send');
  end if;

  update relay.broadcasts x
     set fed = b.fed + v_n,
         recipients = x.recipients - (v_taken - v_ok),
         skipped = x.skipped + (v_taken - v_ok),
         updated_at = now()
   where x.id = b.id;
  return query select coalesce(cardinality(v_ids), 0), v_taken - v_ok, b.staged - b.fed - v_n, false;
end $$;
