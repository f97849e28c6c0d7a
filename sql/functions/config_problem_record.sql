-- relay.config_problem_record: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0008_config_problems.sql. Edit here, never in a numbered file.
/*
 * Records one occurrence. A new episode (no row yet) also raises its alert (at most one an hour per
 * component and bot, even if the condition flaps): one kind=alert message to
 * the operators' chat (p_ops_chat_id, else relay.outbound_settings.default_chat_id), unless the
 * component is 'outbound' (the Bot API itself is what is misconfigured: the alert could not be sent
 * and would fail the same way) or no operators' chat is known. Returns whether the episode is new and
 * the alert's id. Concurrent first occurrences on several workers: the primary key lets one insert win.
 */
create or replace function relay.config_problem_record(
  p_component text, p_bot_id text, p_code text, p_status integer, p_reason text, p_worker_id text, p_ops_chat_id text
) returns table (new_episode boolean, alert_id bigint)
language plpgsql as $$
declare
  v_new boolean;
  v_chat text;
  v_job uuid;
  v_id bigint;
  v_text text;
  v_bot text;
  v_since timestamptz;
  v_msg_id text;
begin
  insert into relay.config_problems as p (component, bot_id, code, status, reason, worker_id)
  values (p_component, coalesce(p_bot_id, ''), p_code, p_status, p_reason, p_worker_id)
  on conflict (component, bot_id) do update
     set code = excluded.code, status = excluded.status, reason = excluded.reason, worker_id = excluded.worker_id,
         last_seen_at = now(), occurrences = p.occurrences + 1
  returning (xmax = 0), p.since into v_new, v_since;
  new_episode := v_new;
  alert_id := null;
  if v_new and p_component <> 'outbound' then
   -- the alert is best effort: a bad operators' chat must not fail the outcome it rides on
   begin
    select s.default_chat_id, s.bot_id into v_chat, v_bot from relay.outbound_settings s where s.singleton;
    v_chat := coalesce(nullif(btrim(p_ops_chat_id), ''), v_chat);
    v_bot := coalesce(nullif(btrim(p_bot_id), ''), v_bot);
    if v_chat is not null and v_bot is not null then
      v_chat := relay.outbound_normalize_chat(v_chat, 'OPS_CHAT_ID');
      v_text := left(format(E'tg-relay: %s delivery is misconfigured\n%s\nItems are kept and retried with backoff; this alert is sent once until it works again.',
                            p_component, p_reason), 4096);
      v_job := gen_random_uuid();
      -- keyed by the hour, not the episode: a flapping collector (a bad node behind a load balancer)
      -- opens many short episodes, and still raises at most one alert an hour
      v_msg_id := left(format('alert:config:%s:%s:%s', p_component, coalesce(p_bot_id, ''), floor(extract(epoch from v_since) / 3600)::bigint), 256);
      perform relay.outbound_lock_chat(v_bot, v_chat);
      insert into relay.outbound as o (msg_id, bot_id, chat_id, target_chat_id, text, kind, delivery, payload_sha256, job_id)
      values (v_msg_id, v_bot, v_chat, v_chat, v_text, 'alert', 'at_least_once', encode(sha256(convert_to(v_text, 'UTF8')), 'hex'), v_job)
      on conflict (msg_id) do nothing
      returning o.id into v_id;
      if v_id is not null then
        perform relay.outbound_boss_job_insert(v_job, jsonb_build_object('outboundId', v_id::text, 'msgId', v_msg_id));
        perform pg_notify('tg_relay_work', 'outbound.send');
        update relay.config_problems set alert_id = v_id where component = p_component and bot_id = coalesce(p_bot_id, '');
        alert_id := v_id;
      end if;
    end if;
   exception when others then
    alert_id := null;
    raise warning 'tg-relay: the alert of a new % configuration problem could not be raised: %', p_component, sqlerrm;
   end;
  end if;
  return next;
end $$;
