-- relay.outbound_alert_windows_flush: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). First created here (migration 0028's alerts). Edit here, never in a numbered file.
/*
 * Closes the alert windows (relay.alert_windows) that are over and hold failures back: for each, ONE
 * kind=alert message summarising them (how many, per reason and kind, the first few msg_ids; never
 * message text), msg_id `alert:window:<bot>:<chat>:<seq>` (relay.outbound_alert_msg_id keeps user
 * messages out of that form), and a new window of p_window_ms opens with that alert, so an
 * operators' chat gets at most one alert per window however long a storm lasts. Windows holding
 * nothing back simply lapse. p_bot_id/p_chat_id: only that window (relay.outbound_raise_alerts, and
 * the workers' tick, which flushes one window per transaction); null: every due one. Locks
 * relay.outbound_lock_chat before the window's row, in the order relay.outbound_raise_alerts does.
 * With null, one transaction takes the locks of several operators' chats: not for busy fleets.
 * Returns the ids of the alerts enqueued.
 */
create or replace function relay.outbound_alert_windows_flush(p_window_ms integer, p_bot_id text default null,
                                                                p_chat_id text default null) returns setof bigint
language plpgsql as $$
declare
  c record;
  w relay.alert_windows%rowtype;
  v_text text;
  v_seq bigint;
  v_id bigint;
  v_try integer;
begin
  for c in
    select a.bot_id, a.chat_id from relay.alert_windows a
     where a.failures > 0 and a.closes_at <= clock_timestamp()
       and (p_bot_id is null or a.bot_id = p_bot_id) and (p_chat_id is null or a.chat_id = p_chat_id)
     order by a.closes_at
  loop
    perform relay.outbound_lock_chat(c.bot_id, c.chat_id);
    select * into w from relay.alert_windows a where a.bot_id = c.bot_id and a.chat_id = c.chat_id for update;
    -- another worker's tick may have closed it meanwhile
    continue when not found or w.failures = 0 or w.closes_at > clock_timestamp();
    v_text := format(E'tg-relay: %s more outbound message%s failed (%s – %s UTC)\nby reason:\n%s\nby kind: %s\nfirst msg_ids: %s\n(alerts are coalesced: at most one per %s s, ALERT_COALESCE)',
      w.failures, case when w.failures = 1 then '' else 's' end,
      to_char(w.first_failed_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS'),
      to_char(w.updated_at at time zone 'UTC', 'HH24:MI:SS'),
      (select string_agg(format('  %s × %s', r.value, r.key), E'\n' order by r.value::bigint desc, r.key)
         from jsonb_each_text(w.by_reason) r),
      (select string_agg(format('%s %s', k.key, k.value), ', ' order by k.key) from jsonb_each_text(w.by_kind) k),
      array_to_string(w.msg_ids, ', '),
      round(p_window_ms / 1000.0, 1));
    v_text := left(v_text, 4096);
    v_seq := w.seq;
    v_id := null;
    for v_try in 1..5 loop
      v_seq := v_seq + 1;
      v_id := relay.outbound_alert_insert(c.bot_id, c.chat_id,
                format('alert:window:%s:%s:%s', c.bot_id, c.chat_id, v_seq), v_text);
      -- taken only if seq went back (a restored table): the next number is free
      exit when v_id is not null;
    end loop;
    update relay.alert_windows a
       set opened_at = clock_timestamp(), closes_at = clock_timestamp() + p_window_ms * interval '1 millisecond',
           seq = v_seq, failures = 0, by_reason = '{}', by_kind = '{}', msg_ids = '{}', first_failed_at = null,
           updated_at = clock_timestamp()
     where a.bot_id = c.bot_id and a.chat_id = c.chat_id;
    if v_id is not null then return next v_id; end if;
  end loop;
end $$;
