-- relay.outbound_rate_penalize: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0004_outbound.sql. Edit here, never in a numbered file.
/*
 * A 429 for a send to p_chat_id: the chat may not send before now + retry_after. Telegram does not
 * say which limit was hit; when a 429 for another chat of the same bot came within the last
 * max(retry_after, 1 s), the limit is taken to be the bot's and the whole bot waits too.
 * Returns true when the bot was pushed back; a bot-level push holds the paid-broadcast budget
 * (paid_tat, 0031) as well.
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
         tat = case when v_bot_level then greatest(r.tat, v_until + p_bot_burst_tolerance_ms * interval '1 millisecond') else r.tat end,
         paid_tat = case when v_bot_level then greatest(r.paid_tat, v_until) else r.paid_tat end
   where r.bot_id = p_bot_id;
  return v_bot_level;
end $$;
