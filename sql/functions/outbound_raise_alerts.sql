-- relay.outbound_raise_alerts: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0004_outbound.sql. Edit here, never in a numbered file.
/*
 * Alerts for failed messages: one kind=alert message to the operators' chat per failed message,
 * msg_id relay.outbound_alert_msg_id(msg_id) (insert-if-absent: retried or redelivered failures
 * never raise a second one). Loop guard: a failed alert never raises an alert. Runs in the
 * transaction that marks the rows failed. No message text in the alert (user data), only ids and
 * Telegram's description. Returns the ids of the alerts created.
 * An answer to a query that Telegram no longer takes ("query is too old", "query ID is invalid":
 * the user's client stopped waiting seconds ago) is no operator's business: recorded, not alerted.
 */
create or replace function relay.outbound_raise_alerts(p_ids bigint[], p_ops_chat_id text) returns setof bigint
language plpgsql as $$
declare
  f record;
  v_chat text;
  v_job uuid;
  v_id bigint;
  v_text text;
  v_msg_id text;
  v_try integer;
begin
  v_chat := coalesce(nullif(btrim(p_ops_chat_id), ''), (select s.default_chat_id from relay.outbound_settings s where s.singleton));
  if v_chat is null then return; end if;
  v_chat := relay.outbound_normalize_chat(v_chat, 'OPS_CHAT_ID');
  for f in
    select o.* from relay.outbound o where o.id = any(p_ids) and o.state = 'failed' and o.kind <> 'alert'
       and not (starts_with(o.method, 'answer') and coalesce(o.failed_reason, '') ~* '(query is too old|query id is invalid)')
     order by o.id
  loop
    v_text := left(format(E'tg-relay: outbound message failed\nmsg_id: %s\nchat: %s%s\nkind: %s, delivery: %s, attempts: %s\nreason: %s',
                          f.msg_id, coalesce(f.chat_id, 'none (an answer to a query)'),
                          case when f.target_chat_id <> f.chat_id then format(' (migrated to %s)', f.target_chat_id) else '' end
                            || case when f.method <> 'sendMessage' then format(E'\nmethod: %s', f.method) else '' end,
                          f.kind, f.delivery, f.attempts, coalesce(f.failed_reason, f.last_error, 'unknown')), 4096);
    v_job := gen_random_uuid();
    v_id := null;
    v_msg_id := relay.outbound_alert_msg_id(f.msg_id);
    perform relay.outbound_lock_chat(f.bot_id, v_chat); -- ids of the operators' chat in commit order too
    for v_try in 1..2 loop
      insert into relay.outbound as o (msg_id, bot_id, chat_id, target_chat_id, text, kind, delivery, payload_sha256, job_id)
      values (v_msg_id, f.bot_id, v_chat, v_chat, v_text, 'alert', 'at_least_once',
              encode(sha256(convert_to(v_text, 'UTF8')), 'hex'), v_job)
      on conflict (msg_id) do nothing
      returning o.id into v_id;
      exit when v_id is not null or exists (select 1 from relay.outbound o where o.msg_id = v_msg_id and o.kind = 'alert');
      -- a message enqueued before `alert:` was reserved holds the id: the alert takes the hashed form
      v_msg_id := 'alert:' || left(f.msg_id, 185) || '~' || encode(sha256(convert_to(f.msg_id, 'UTF8')), 'hex');
    end loop;
    if v_id is not null then
      perform relay.outbound_boss_job_insert(v_job, jsonb_build_object('outboundId', v_id::text, 'msgId', v_msg_id));
      perform pg_notify('tg_relay_work', 'outbound.send');
      return next v_id;
    end if;
  end loop;
end $$;
