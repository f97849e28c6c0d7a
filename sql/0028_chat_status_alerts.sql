-- 0028_chat_status_alerts: chats the bot can no longer reach, and coalesced alerts.
-- Why: a broadcast to thousands of subscribers meets users who blocked the bot or deleted their
-- account. Telegram's answer (403 "bot was blocked by the user", "user is deactivated", "bot was
-- kicked", 400 "chat not found") is terminal for the message and says something lasting about the
-- chat: it is recorded here, in the settle transaction of the attempt, so the next broadcast can skip
-- the chat, and it is cleared by the next message delivered to that chat (the user unblocked the bot).
-- Such failures are expected traffic, not an operator's business one by one: they raise no alert.
--
-- Alerts about other failed messages go to the operators' chat at most once per ALERT_COALESCE
-- window (relay.outbound_raise_alerts): relay.alert_windows holds, per (bot, operators' chat), the
-- window of the last alert and what failed since, summarised in one alert when the window closes.
-- An alert storm (1,000 failures) was 1,000 alerts ahead of real traffic in the operators' chat.

create table if not exists relay.chat_status (
  bot_id      text not null,
  chat_id     text not null,                             -- the chat the message was sent to (target_chat_id)
  status      text not null check (status in ('blocked', 'deactivated', 'kicked', 'chat_not_found')),
  reason      text not null,                             -- Telegram's description, as in failed_reason
  since       timestamptz not null default now(),        -- first answered with this status (since the last delivery)
  updated_at  timestamptz not null default now(),        -- last answered with it
  primary key (bot_id, chat_id)
);
-- GET /v1/chats/status?status=…, newest first, and the counts of /v1/stats
create index if not exists chat_status_status_idx on relay.chat_status (status, since desc);

create table if not exists relay.alert_windows (
  bot_id           text not null,
  chat_id          text not null,                        -- the operators' chat the alerts go to
  opened_at        timestamptz not null,                 -- the window's alert was enqueued then
  closes_at        timestamptz not null,                 -- no other alert before this
  seq              bigint not null default 0,            -- summaries enqueued so far (numbers their msg_ids)
  failures         integer not null default 0 check (failures >= 0), -- failures held back since the window's alert
  by_reason        jsonb not null default '{}',          -- held back: count per failure reason (a bounded number of reasons)
  by_kind          jsonb not null default '{}',          -- held back: count per kind (message, reply)
  msg_ids          text[] not null default '{}',         -- held back: the first few msg_ids
  first_failed_at  timestamptz,                          -- held back: the earliest failure
  updated_at       timestamptz not null default now(),
  primary key (bot_id, chat_id)
);
-- the flush tick looks for closed windows that hold failures back
create index if not exists alert_windows_due_idx on relay.alert_windows (closes_at) where failures > 0;

-- When a failed message was counted in an alert (alerted at once or held back in a window): a
-- failure settled again (a redelivered settlement, the stale sweep) is never counted twice.
alter table relay.outbound add column if not exists alerted_at timestamptz;
