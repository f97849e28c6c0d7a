-- relay.broadcast_stage: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created with 0030_broadcast_recipients.sql. Edit here, never in a numbered file.
/*
 * Stores the audience of broadcast p_broadcast_id in relay.broadcast_recipients: p_chat_ids, or when
 * null the chats its registered audience query returns. One set-based insert into a narrow table,
 * 1,000 chats to a row (no relay.outbound row, no ledger job yet: relay.broadcast_feed makes those
 * at the pace of sending). Each chat once, numbered 1..n; chats relay.chat_status marks blocked,
 * deactivated or kicked (unless the broadcast has include_blocked) are left out and counted in
 * skipped. p_chat_ids are chat ids as the library normalises them (libs/outbound/message.ts
 * normalizeChatId: it refuses a request with any other); an audience query's chats are normalised
 * here, and those that are not an integer chat id or @channelusername are skipped. Sets
 * recipients = staged = n.
 * A broadcast is staged once: a second call is an error (its recipients would be numbered twice).
 */
create or replace function relay.broadcast_stage(p_broadcast_id bigint, p_chat_ids text[] default null)
returns table (staged integer, skipped integer)
-- the distinct of 100,000 chats spills to disk at the default 4 MB
language plpgsql set work_mem = '64MB' as $$
declare
  b relay.broadcasts%rowtype;
  v_audience text;
  v_chats text[] := p_chat_ids;
  v_total integer;
  v_staged integer;
begin
  select * into b from relay.broadcasts x where x.id = p_broadcast_id for update;
  if not found then
    raise exception using errcode = 'TR422', message = format('RELAY_BROADCAST_NOT_FOUND: broadcast %s does not exist', p_broadcast_id);
  end if;
  if b.staged > 0 or exists (select 1 from relay.broadcast_recipients r where r.broadcast_id = b.id) then
    raise exception using errcode = 'TR409', message = format('RELAY_BROADCAST_STATE: broadcast %s is staged already', b.id);
  end if;

  if v_chats is null then
    select a.sql into v_audience from relay.broadcast_audiences a where a.name = b.audience->>'name';
    if v_audience is null then
      raise exception using errcode = 'TR422', message = format('RELAY_BROADCAST_INVALID: no audience named "%s" is registered', left(b.audience->>'name', 64));
    end if;
    execute format('select array_agg(x::text) from (%s) as q(x)', v_audience) into v_chats using b.bot_id;
    v_chats := coalesce(v_chats, '{}');
  end if;

  with asked as materialized (
    select distinct c from unnest(v_chats) as u(c)
  ), valid as (
    -- the regular expressions cost about as much as the insert: only an audience query's output needs them
    select distinct case when c ~ '^-?[0-9]{1,18}$' and c::bigint <> 0 then (c::bigint)::text
                         when c ~ '^@[A-Za-z0-9_]{4,32}$' then c end as chat
      from asked where p_chat_ids is null
    union all
    select c from asked where p_chat_ids is not null
  ), eligible as (
    select v.chat, row_number() over () - 1 as i from valid v
     where v.chat is not null
       and (b.include_blocked or not exists (
             select 1 from relay.chat_status s
              where s.bot_id = b.bot_id and s.chat_id = v.chat and s.status in ('blocked', 'deactivated', 'kicked')))
  ), ins as (
    insert into relay.broadcast_recipients (broadcast_id, chunk, chat_ids)
    select b.id, e.i / 1000, array_agg(e.chat order by e.i) from eligible e group by e.i / 1000
    returning cardinality(chat_ids) as n
  )
  select (select count(*) from asked), (select coalesce(sum(n), 0) from ins) into v_total, v_staged;

  update relay.broadcasts x
     set recipients = v_staged, staged = v_staged, fed = 0, skipped = v_total - v_staged, updated_at = now()
   where x.id = b.id;
  return query select v_staged, v_total - v_staged;
end $$;
