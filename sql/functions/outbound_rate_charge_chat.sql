-- relay.outbound_rate_charge_chat: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0004_outbound.sql. Edit here, never in a numbered file.
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
  -- one statement that inserts or locks the row: prune deletes idle rows (libs/retention), and one
  -- deleted between a separate insert-if-absent and select would lose this charge
  insert into relay.outbound_chat_rate as r (bot_id, chat_id) values (p_bot_id, p_chat_id)
  on conflict (bot_id, chat_id) do update set updated_at = r.updated_at
  returning r.* into c;
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
