-- 0034_bots: the bot registry, for fleet processes that serve many bots from one database.
-- Why: a platform hosting bots for its customers cannot run a poller and a worker set per token.
-- Each registered bot has its token (encrypted: AES-256-GCM under TOKEN_ENCRYPTION_KEY, so a dump
-- of the database or a read-only SQL user never sees one in clear), what serves it (handlers module,
-- capture URL, allow-list, operators' chat) and its settings. A process started without
-- TELEGRAM_BOT_TOKEN serves the enabled rows; single-bot mode does not read this table.
--
-- Running processes learn of a change within seconds: every insert, update or delete notifies
-- `tg_relay_bots` (the registry watcher also re-reads on a timer, for a missed notification or a
-- transaction pooler), and `version` grows on every change so a reader can tell what moved.

create table if not exists relay.bots (
  id               text primary key check (id ~ '^[0-9]{1,20}$'),
  -- from getMe when the bot was added (and refreshed when its token changes)
  username         text,
  -- iv (12 bytes) || auth tag (16) || ciphertext; the bot id is the additional authenticated data,
  -- so a token copied to another row does not decrypt
  token_encrypted  bytea not null,
  -- the first 16 hex digits of sha256(key): says which key a token was encrypted with
  token_key_id     text not null,
  handlers         text,
  capture_url      text,
  allowed_chat_ids text[] not null default '{}',
  ops_chat_id      text,
  enabled          boolean not null default true,
  -- per-bot settings (rates, paid broadcasts): keys as the configuration's variables
  settings         jsonb not null default '{}'::jsonb check (jsonb_typeof(settings) = 'object'),
  version          bigint not null default 1,
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now()
);

create or replace function relay.bots_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('tg_relay_bots', coalesce(new.id, old.id));
  return null;
end $$;

drop trigger if exists bots_notify on relay.bots;
create trigger bots_notify after insert or update or delete on relay.bots
  for each row execute function relay.bots_notify();
