-- relay.outbound_alert_insert: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). First created here (migration 0028's alerts). Edit here, never in a numbered file.
/*
 * Enqueues one kind=alert message (at_least_once, the default lane) to the operators' chat with its
 * ledger job and a wake-up, insert-if-absent on p_msg_id: returns the new row's id, or null when the
 * msg_id is taken (the caller decides what that means). The caller holds
 * relay.outbound_lock_chat(p_bot_id, p_chat_id), so the chat's ids follow commit order.
 * Shared by the alert of a single failure and the summary of an alert window.
 */
create or replace function relay.outbound_alert_insert(p_bot_id text, p_chat_id text, p_msg_id text, p_text text)
returns bigint
language plpgsql as $$
declare
  v_job uuid := gen_random_uuid();
  v_id bigint;
begin
  insert into relay.outbound as o (msg_id, bot_id, chat_id, target_chat_id, text, kind, delivery, payload_sha256, job_id)
  values (p_msg_id, p_bot_id, p_chat_id, p_chat_id, p_text, 'alert', 'at_least_once',
          encode(sha256(convert_to(p_text, 'UTF8')), 'hex'), v_job)
  on conflict (msg_id) do nothing
  returning o.id into v_id;
  if v_id is not null then
    perform relay.outbound_boss_job_insert(v_job, jsonb_build_object('outboundId', v_id::text, 'msgId', p_msg_id));
    perform pg_notify('tg_relay_work', 'outbound.send');
  end if;
  return v_id;
end $$;
