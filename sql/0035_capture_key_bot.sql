-- 0035_capture_key_bot: capture keys name the bot.
-- Why: chat ids are the same for every bot (a private chat's id is the user's) and update and
-- message ids count per bot, so two bots of one database gave one user's messages to both the same
-- key `telegram:{update_id}:{chat_id}:{message_id}`, and the second bot's capture was refused as a
-- conflict. New captures are keyed `telegram:{bot_id}:{update_id}:{chat_id}:{message_id}`.
-- Rows stored before keep their key: the collector has seen it (Idempotency-Key and the document's
-- `key`) and a retry must send it again; ingress looks a bot's capture up under the old key too, so
-- an update delivered again across the upgrade is not captured twice. No row changes, no rewrite.
comment on column relay.captures.capture_key is
  'telegram:{bot_id}:{update_id}:{chat_id}:{message_id}; rows stored before 0035 keep telegram:{update_id}:{chat_id}:{message_id}';
