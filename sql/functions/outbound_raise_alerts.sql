-- relay.outbound_raise_alerts: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0004_outbound.sql. Edit here, never in a numbered file.
/*
 * Alerts for failed messages, coalesced per (bot, operators' chat) in windows of p_window_ms
 * (ALERT_COALESCE; relay.alert_windows):
 *  - a failure while no window is open raises its alert at once (an operator learns of a single
 *    failure now, not a window later), kind=alert, msg_id relay.outbound_alert_msg_id(msg_id), and
 *    opens a window;
 *  - a failure inside the window is held back: counted per reason and kind, its msg_id kept among
 *    the first few; when the window is over, relay.outbound_alert_windows_flush sends ONE summary,
 *    which opens the next window (the workers' tick, or the next failure after the window);
 * so the operators' chat gets at most one alert per window, however many messages fail.
 * Each failed message is counted once (outbound.alerted_at): a failure settled again raises nothing.
 * Loop guard: a failed alert never raises an alert. Runs in the transaction that marks the rows
 * failed. No message text in alerts (user data), only ids and Telegram's description.
 * An answer to a query that Telegram no longer takes ("query is too old", "query ID is invalid":
 * the user's client stopped waiting seconds ago) is no operator's business: recorded, not alerted.
 * Returns the ids of the alerts created.
 */
drop function if exists relay.outbound_raise_alerts(bigint[], text);
create or replace function relay.outbound_raise_alerts(p_ids bigint[], p_ops_chat_id text, p_window_ms integer default 60000)
returns setof bigint
language plpgsql as $$
declare
  f record;
  w relay.alert_windows%rowtype;
  v_chat text;
  v_id bigint;
  v_text text;
  v_msg_id text;
  v_reason text;
  v_try integer;
begin
  v_chat := coalesce(nullif(btrim(p_ops_chat_id), ''), (select s.default_chat_id from relay.outbound_settings s where s.singleton));
  if v_chat is null then return; end if;
  v_chat := relay.outbound_normalize_chat(v_chat, 'OPS_CHAT_ID');
  for f in
    select o.* from relay.outbound o where o.id = any(p_ids) and o.state = 'failed' and o.kind <> 'alert'
       and o.alerted_at is null
       and not (starts_with(o.method, 'answer') and coalesce(o.failed_reason, '') ~* '(query is too old|query id is invalid)')
     order by o.id
  loop
    update relay.outbound set alerted_at = clock_timestamp() where id = f.id;
    perform relay.outbound_lock_chat(f.bot_id, v_chat); -- ids of the operators' chat in commit order; the window's lock
    insert into relay.alert_windows (bot_id, chat_id, opened_at, closes_at)
    values (f.bot_id, v_chat, '-infinity', '-infinity') on conflict do nothing;
    select * into w from relay.alert_windows a where a.bot_id = f.bot_id and a.chat_id = v_chat for update;

    if w.closes_at <= clock_timestamp() and w.failures = 0 then
      -- no window open: this failure's own alert, now; it opens the window
      v_text := left(format(E'tg-relay: outbound message failed\nmsg_id: %s\nchat: %s%s\nkind: %s, delivery: %s, attempts: %s\nreason: %s',
                            f.msg_id, coalesce(f.chat_id, 'none (an answer to a query)'),
                            case when f.target_chat_id <> f.chat_id then format(' (migrated to %s)', f.target_chat_id) else '' end
                              || case when f.method <> 'sendMessage' then format(E'\nmethod: %s', f.method) else '' end,
                            f.kind, f.delivery, f.attempts, coalesce(f.failed_reason, f.last_error, 'unknown')), 4096);
      v_msg_id := relay.outbound_alert_msg_id(f.msg_id);
      v_id := null;
      for v_try in 1..2 loop
        v_id := relay.outbound_alert_insert(f.bot_id, v_chat, v_msg_id, v_text);
        exit when v_id is not null or exists (select 1 from relay.outbound o where o.msg_id = v_msg_id and o.kind = 'alert');
        -- a message enqueued before `alert:` was reserved holds the id: the alert takes the hashed form
        v_msg_id := 'alert:' || left(f.msg_id, 185) || '~' || encode(sha256(convert_to(f.msg_id, 'UTF8')), 'hex');
      end loop;
      update relay.alert_windows a
         set opened_at = clock_timestamp(), closes_at = clock_timestamp() + p_window_ms * interval '1 millisecond',
             updated_at = clock_timestamp()
       where a.bot_id = f.bot_id and a.chat_id = v_chat;
      if v_id is not null then return next v_id; end if;
      continue;
    end if;

    -- held back in the window: a bounded summary (at most 10 reasons of 120 characters, 5 msg_ids)
    v_reason := left(coalesce(f.failed_reason, f.last_error, 'unknown'), 120);
    if not w.by_reason ? v_reason and (select count(*) from jsonb_object_keys(w.by_reason)) >= 10 then
      v_reason := '(other reasons)';
    end if;
    update relay.alert_windows a
       set failures = a.failures + 1,
           by_reason = jsonb_set(a.by_reason, array[v_reason], to_jsonb(coalesce((a.by_reason ->> v_reason)::bigint, 0) + 1)),
           by_kind = jsonb_set(a.by_kind, array[f.kind], to_jsonb(coalesce((a.by_kind ->> f.kind)::bigint, 0) + 1)),
           msg_ids = case when cardinality(a.msg_ids) < 5 then a.msg_ids || left(f.msg_id, 100) else a.msg_ids end,
           first_failed_at = coalesce(a.first_failed_at, clock_timestamp()),
           updated_at = clock_timestamp()
     where a.bot_id = f.bot_id and a.chat_id = v_chat;
    -- the window is over but no tick has closed it yet: this failure closes it
    if w.closes_at <= clock_timestamp() then
      return query select relay.outbound_alert_windows_flush(p_window_ms, f.bot_id, v_chat);
    end if;
  end loop;
end $$;
