-- relay.outbound_rate_reserve_paid: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). First created with 0031_outbound_paid_rate.sql. Edit here, never in a numbered file.
/*
 * Reserves the bot's next paid-broadcast slot (paid_tat, burst 1) for a bulk message that carries
 * allow_paid_broadcast, as relay.outbound_rate_reserve does for the free budget (tat): the slot is
 * the later of now and paid_tat; nothing is reserved when the chat is not ready by then or the slot
 * is more than p_horizon_ms away (`wait_ms` says when to try again). The free budget is not touched,
 * so interactive messages keep it all; per-chat limits apply as to any send.
 */
create or replace function relay.outbound_rate_reserve_paid(
  p_bot_id text, p_chat_id text, p_interval_ms float8, p_horizon_ms float8
) returns table (reserved boolean, wait_ms float8)
language plpgsql as $$
declare
  v_tat timestamptz;
  v_now timestamptz;
  v_slot timestamptz;
  v_chat_next timestamptz;
begin
  insert into relay.outbound_bot_rate (bot_id) values (p_bot_id) on conflict do nothing;
  select b.paid_tat into v_tat from relay.outbound_bot_rate b where b.bot_id = p_bot_id for update;
  v_now := clock_timestamp();
  v_slot := greatest(v_now, v_tat);
  select c.next_at into v_chat_next from relay.outbound_chat_rate c where c.bot_id = p_bot_id and c.chat_id = p_chat_id;
  if v_chat_next is not null and v_chat_next > v_slot then
    return query select false, (extract(epoch from (v_chat_next - v_now)) * 1000)::float8;
    return;
  end if;
  if v_slot - v_now > p_horizon_ms * interval '1 millisecond' then
    return query select false, (extract(epoch from (v_slot - v_now)) * 1000)::float8;
    return;
  end if;
  update relay.outbound_bot_rate b set paid_tat = v_slot + p_interval_ms * interval '1 millisecond', updated_at = v_now
   where b.bot_id = p_bot_id;
  return query select true, (extract(epoch from (v_slot - v_now)) * 1000)::float8;
end $$;
