-- relay.outbound_alert_msg_id: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Edit here, never in a numbered file.
/*
 * The msg_id of the alert about a failed message: `alert:<msg_id>` while that stays readable
 * (msg_id of at most 185 characters), else `alert:<first 185 characters>~<sha256 hex of the whole
 * msg_id>`, exactly 256 characters. One-to-one: the two forms differ in length (at most 191 against
 * 256), and the long form names the whole msg_id, so messages sharing a long prefix get alerts of
 * their own. Users cannot enqueue into `alert:` (relay.outbound_upsert refuses it), so no message
 * takes an alert's id before the alert does (a row enqueued before that rule holding it makes
 * relay.outbound_raise_alerts fall back to the hashed form). `alert:config:` ids belong to the
 * configuration-problem alerts (relay.config_problem_record) and `alert:window:` ids to the
 * summaries of alert windows (relay.outbound_alert_windows_flush), so a msg_id starting with
 * `config:` or `window:` always takes the long form.
 */
create or replace function relay.outbound_alert_msg_id(p_msg_id text) returns text
language sql immutable strict as $$
  select case when char_length(p_msg_id) <= 185 and not starts_with(p_msg_id, 'config:')
                   and not starts_with(p_msg_id, 'window:') then 'alert:' || p_msg_id
              else 'alert:' || left(p_msg_id, 185) || '~' || encode(sha256(convert_to(p_msg_id, 'UTF8')), 'hex') end
$$;
