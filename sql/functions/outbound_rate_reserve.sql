-- relay.outbound_rate_reserve: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0004_outbound.sql; p_ahead_ms added with
-- 0027_outbound_lanes.sql. Edit here, never in a numbered file.
/*
 * Reserves the bot's next send slot for a message to p_chat_id. The slot is the later of now and the
 * bot's earliest allowed time (tat - (burst-1)·interval); reserving moves tat to slot + interval.
 * Nothing is reserved when the chat is not ready by then (its next_at is later) or the slot is more
 * than p_horizon_ms away: `reserved` is false and `wait_ms` says when to try again.
 * The bot row is locked only for this statement: reservations of all replicas queue on it.
 *
 * p_ahead_ms (bulk lane; null for interactive) bounds the slot far tighter than the horizon: a bulk
 * message reserves only a slot at most p_ahead_ms away (one bot interval), else `wait_ms` is how
 * long until it would be. So bulk never books the budget into the future, and an interactive
 * message, which takes the next free slot, waits at most that long behind any broadcast.
 */
-- The 5-argument signature (before 0027): dropped, since an added default cannot be replaced in and
-- an overload would make existing calls ambiguous.
drop function if exists relay.outbound_rate_reserve(text, text, float8, integer, float8);
create or replace function relay.outbound_rate_reserve(
  p_bot_id text, p_chat_id text, p_interval_ms float8, p_burst integer, p_horizon_ms float8,
  p_ahead_ms float8 default null
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
  if p_ahead_ms is not null and v_slot - v_now > p_ahead_ms * interval '1 millisecond' then
    return query select false, (extract(epoch from (v_slot - v_now)) * 1000 - p_ahead_ms)::float8;
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
