-- 0026_sessions: telegraf sessions of the bots' handlers, committed with the update that wrote them.
-- Why: a handler's session (`dispatch.sessionStore()`, a telegraf SessionStore) must change exactly
-- when its update is marked handled: an attempt's writes are kept in memory and written in the
-- outcome transaction, conditioned on the version the attempt read, so two attempts that write the
-- same key (a per-user key written from two chats) cannot lose an update: the later one finds the
-- version moved, rolls back and is retried (RELAY_SESSION_CONFLICT).
-- A session expires SESSION_TTL after its last write (expires_at); reads ignore expired rows and
-- retention deletes them (sessions_expires_idx).

create table if not exists relay.sessions (
  bot_id text not null,
  key text not null,
  value jsonb not null,
  -- 1 on insert, +1 on every write: the optimistic-concurrency token read with the value
  version bigint not null default 1 check (version >= 1),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (bot_id, key)
);

create index if not exists sessions_expires_idx on relay.sessions (expires_at);
