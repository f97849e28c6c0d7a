-- relay.broadcast_row_fields: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created with 0030_broadcast_recipients.sql. Edit here, never in a numbered file.
/*
 * What every outbound row of broadcast b carries besides its chat: the payload's sha256 (one per
 * broadcast: the rows of one broadcast are the same message) and how many messages one send makes
 * (an album counts its media). relay.broadcast_enqueue and relay.broadcast_feed write rows with it.
 */
create or replace function relay.broadcast_row_fields(b relay.broadcasts, out payload_sha256 text, out message_count integer)
language sql stable as $$
  select encode(sha256(convert_to(jsonb_build_object('broadcast', b.id, 'bot_id', b.bot_id, 'method', b.method,
           'text', b.text, 'parse_mode', b.parse_mode, 'disable_notification', b.disable_notification,
           'reply_markup', b.reply_markup, 'send_options', b.send_options, 'params', b.params)::text, 'UTF8')), 'hex'),
         case when b.method = 'sendMediaGroup' and jsonb_typeof(b.params->'media') = 'array'
                then greatest(1, jsonb_array_length(b.params->'media'))
              when b.method in ('forwardMessages', 'copyMessages') and jsonb_typeof(b.params->'message_ids') = 'array'
                then greatest(1, jsonb_array_length(b.params->'message_ids'))
              else 1 end
$$;
