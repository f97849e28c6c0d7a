-- 0017_update_id_reuse: an update_id Telegram reuses is a new update, and the cursor says where
-- a refused webhook update is.
-- Why: after a week without updates Telegram picks the next update_id at random, so an id can come
-- back with another update. The inbox key (bot_id, update_id) took that update for a redelivery:
-- it was never stored nor dispatched. Identity is now the bytes: Telegram redelivers an update
-- byte for byte (its queue keeps the serialized update), so the same id with the same bytes is a
-- redelivery and the same id with other bytes is another update, stored under the next
-- update_epoch of that id (0 for the first; existing rows are epoch 0, so every existing reader of
-- (bot_id, update_id) sees what it saw before until an id is actually reused).
alter table relay.inbox add column if not exists update_epoch integer not null default 0
  check (update_epoch >= 0);
comment on column relay.inbox.update_epoch is
  'how many earlier updates with other bytes were stored under this update_id (Telegram reuses ids after a week without updates); 0 for the first';
alter table relay.inbox drop constraint if exists inbox_bot_id_update_id_key;
create unique index if not exists inbox_update_epoch_uq on relay.inbox (bot_id, update_id, update_epoch);

-- The update a DECODE_POLICY=stop refusal is about: a webhook refusal clears halted_reason once
-- that update is stored in the inbox (a decoder that accepts it, or an operator's release).
alter table relay.cursor add column if not exists halted_update_id bigint;
comment on column relay.cursor.halted_update_id is
  'update_id of the update DECODE_POLICY=stop refused (webhook), null when unknown or not halted';
