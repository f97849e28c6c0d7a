-- 0001_init: the whole data contract of tg-relay (schema `relay`).
-- Why: every component coordinates only through these tables, and operators audit them with plain
-- SQL, so states are lowercase words constrained by CHECKs and the idempotency of ingress and
-- enqueue is enforced by unique keys, not by application code.

create schema if not exists relay;

-- One row per bot: the getUpdates cursor and the poller lease (owner + generation = fencing token).
create table relay.cursor (
  bot_id               text primary key,
  next_offset          bigint not null default 0,         -- offset for the next getUpdates (last stored update_id + 1)
  lease_owner          text,                               -- poller instance id holding the lease
  lease_generation     bigint not null default 0,          -- +1 on every takeover; every batch write checks it
  lease_expires_at     timestamptz,
  progress_generation  bigint,                             -- generation that made the last progress
  progress_at          timestamptz,                        -- last committed batch or completed empty long poll
  halted_reason        text,                               -- decode policy `stop`: why polling halted (no payload)
  halted_at            timestamptz,
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now()
);

-- Every update received, raw, once per (bot_id, update_id). Dispatch state lives here too.
create table relay.inbox (
  id               bigserial primary key,
  bot_id           text not null,
  update_id        bigint not null,
  update_type      text not null,                          -- message, callback_query, ...
  chat_id          bigint,                                 -- null for updates without a chat
  authorized       boolean not null default true,          -- chat in ALLOWED_CHAT_IDS (or no allow-list)
  payload          jsonb not null,                         -- the raw update as received
  state            text not null default 'pending' check (state in ('pending', 'handled', 'failed')),
  attempts         integer not null default 0,
  next_attempt_at  timestamptz not null default now(),
  worker_id        text,                                   -- dispatch claim: which worker runs it now
  claim_id         uuid,                                   -- fencing token of the current claim
  started_at       timestamptz,
  last_error       text,
  job_id           uuid,                                   -- pg-boss job carrying update.dispatch
  generation       bigint,                                 -- poller generation that stored it
  received_at      timestamptz not null default now(),
  handled_at       timestamptz,
  updated_at       timestamptz not null default now(),
  unique (bot_id, update_id)
);
create index inbox_pending_chat_idx on relay.inbox (bot_id, chat_id, update_id) where state = 'pending';
create index inbox_state_idx on relay.inbox (state, received_at);

-- Captures of authorized messages, delivered to the collector (CAPTURE_URL).
create table relay.captures (
  id               bigserial primary key,
  capture_key      text not null unique,                   -- telegram:{update_id}:{chat_id}:{message_id}
  bot_id           text not null,
  update_id        bigint not null,
  chat_id          bigint not null,
  message_id       bigint not null,
  from_id          bigint,
  text             text,
  message_date     timestamptz,
  payload          jsonb not null,                         -- the capture document POSTed to the collector
  payload_sha256   text not null,                          -- detects same key with different data
  state            text not null default 'pending' check (state in ('pending', 'delivering', 'delivered', 'failed')),
  attempts         integer not null default 0,
  max_attempts     integer,                                -- null: the worker's RETRY_MAX_ATTEMPTS
  next_attempt_at  timestamptz not null default now(),
  worker_id        text,
  claim_id         uuid,
  started_at       timestamptz,
  last_status      integer,
  last_error       text,
  failed_reason    text,
  job_id           uuid,
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  delivered_at     timestamptz
);
create index captures_pending_idx on relay.captures (next_attempt_at, id) where state = 'pending';
create index captures_delivering_idx on relay.captures (started_at) where state = 'delivering';
create index captures_state_idx on relay.captures (state, created_at);
create index captures_chat_idx on relay.captures (chat_id, created_at);

-- Outbound messages to Telegram (admin API, SQL function, handler replies, alerts).
create table relay.outbound (
  id                   bigserial primary key,
  msg_id               text not null unique,               -- idempotency key, unique for good
  bot_id               text not null,
  chat_id              text not null,                      -- integer chat id or @channelusername, as enqueued
  target_chat_id       text not null,                      -- where it is sent now (differs after migrate_to_chat_id)
  text                 text not null check (char_length(text) between 1 and 4096),
  parse_mode           text check (parse_mode in ('MarkdownV2', 'HTML', 'Markdown')),
  disable_notification boolean not null default false,
  reply_markup         jsonb,
  kind                 text not null default 'message' check (kind in ('message', 'reply', 'alert')),
  delivery             text not null default 'at_least_once' check (delivery in ('at_least_once', 'at_most_once')),
  payload_sha256       text not null,
  source_update_id     bigint,                             -- for handler replies: the update that produced it
  state                text not null default 'pending' check (state in ('pending', 'delivering', 'delivered', 'failed')),
  attempts             integer not null default 0,
  max_attempts         integer,
  next_attempt_at      timestamptz not null default now(),
  worker_id            text,
  claim_id             uuid,
  started_at           timestamptz,
  last_status          integer,
  last_error           text,
  failed_reason        text,
  telegram_message_id  bigint,
  job_id               uuid,
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now(),
  delivered_at         timestamptz
);
create index outbound_pending_idx on relay.outbound (next_attempt_at, id) where state = 'pending';
create index outbound_chat_fifo_idx on relay.outbound (bot_id, target_chat_id, id) where state in ('pending', 'delivering');
create index outbound_delivering_idx on relay.outbound (started_at) where state = 'delivering';
create index outbound_state_idx on relay.outbound (state, created_at);

-- Append-only audit: every delivery attempt and every admin action.
create table relay.attempts (
  id            bigserial primary key,
  subject       text not null check (subject in ('capture', 'outbound', 'inbox', 'quarantine', 'cursor', 'admin')),
  subject_id    bigint,                                    -- id in the subject's table
  subject_key   text,                                      -- capture_key, msg_id, update_id, ...
  attempt       integer,
  worker_id     text,
  started_at    timestamptz not null default now(),
  finished_at   timestamptz,
  duration_ms   integer,
  outcome       text not null,                             -- delivered|retry|failed|ambiguous|handled|... or an admin action
  http_status   integer,
  error_code    text,
  error         text,                                      -- short; never the bot token, never message text
  details       jsonb,
  actor         text                                       -- admin token label for admin actions
);
create index attempts_subject_idx on relay.attempts (subject, subject_id, id);
create index attempts_started_idx on relay.attempts (started_at);

-- Updates that failed to decode (DECODE_POLICY=quarantine): raw bytes kept for an operator.
create table relay.quarantine (
  id           bigserial primary key,
  bot_id       text not null,
  update_id    bigint,                                     -- null when the item had no integer update_id
  raw          bytea not null,
  sha256       text not null,
  error        text not null,
  json_path    text,                                       -- where decoding failed, e.g. $.message.chat.id
  state        text not null default 'quarantined' check (state in ('quarantined', 'released', 'discarded')),
  generation   bigint,
  created_at   timestamptz not null default now(),
  resolved_at  timestamptz
);
create unique index quarantine_update_uq on relay.quarantine (bot_id, update_id) where update_id is not null;
create unique index quarantine_sha_uq on relay.quarantine (bot_id, sha256) where update_id is null;
