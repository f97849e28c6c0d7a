-- 0029_broadcasts: one message to many chats, durable and observable (relay.broadcasts).
-- Why: a broadcast is thousands of outbound rows that must be enqueued fast (set-based, one
-- statement), exactly once (msg_id `bcast:{id}:{chat}`, and the whole audience in the creating
-- transaction), and steered as a whole: progress is counted from its rows (broadcast_id), and
-- pause/resume/cancel act on the rows not yet sent.
--
-- Pausing moves a broadcast's pending rows to the outbound state `paused`: they leave the pending
-- partial indexes, so the claim neither reads nor skips them (no join on the claim path), and they
-- are no chat's FIFO head, so a paused broadcast holds up nothing else sent to its chats. Resuming
-- puts them back to pending, due now. A row in flight when the broadcast is paused finishes its
-- attempt.
--
-- Audiences are named SQL queries an operator registers (relay.broadcast_audiences, via the CLI or
-- the library, never from an HTTP body): `select chat_id from …` with the bot id as $1.

create table if not exists relay.broadcasts (
  id              bigserial primary key,
  bot_id          text not null,
  -- the client's idempotency key: the same key answers the existing broadcast, enqueueing nothing
  key             text unique check (char_length(key) between 1 and 200),
  state           text not null default 'running' check (state in ('running', 'paused', 'cancelled')),
  method          text not null default 'sendMessage',
  -- the message as relay.outbound stores it: text fields for sendMessage, params for other methods
  text            text,
  parse_mode      text,
  disable_notification boolean not null default false,
  reply_markup    jsonb,
  send_options    jsonb,
  params          jsonb,
  -- {"chat_ids": n} or {"name": "<audience>"}: what was asked for, not the chats themselves
  audience        jsonb not null,
  include_blocked boolean not null default false,
  recipients      integer not null default 0 check (recipients >= 0),
  -- chats left out at enqueue: blocked or deactivated in relay.chat_status (unless include_blocked)
  skipped         integer not null default 0 check (skipped >= 0),
  paid            boolean not null default false,
  -- what the broadcast will take and cost, computed before it starts (libs/broadcasts/plan.ts)
  plan            jsonb not null default '{}'::jsonb,
  -- what the request asked for (message, audience, options): a repeated key must ask for the same
  request_sha256  text not null,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now()
);
create index if not exists broadcasts_created_idx on relay.broadcasts (created_at desc, id desc);

create table if not exists relay.broadcast_audiences (
  name        text primary key check (name ~ '^[a-z][a-z0-9_-]{0,62}$'),
  -- a query returning one column of chat ids; $1 is the bot id
  sql         text not null check (char_length(sql) between 1 and 10000),
  description text,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now()
);

alter table relay.outbound add column if not exists broadcast_id bigint;
create index if not exists outbound_broadcast_idx on relay.outbound (broadcast_id, state) where broadcast_id is not null;

alter table relay.outbound drop constraint if exists outbound_state_check;
alter table relay.outbound add constraint outbound_state_check
  check (state in ('pending', 'delivering', 'delivered', 'failed', 'paused'));
alter table relay.outbound add constraint outbound_paused_broadcast_check
  check (state <> 'paused' or broadcast_id is not null);
