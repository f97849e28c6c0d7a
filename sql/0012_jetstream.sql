-- 0012_jetstream: the JetStream bridge (issue 16, `tg-relay jetstream`).
-- Why: the seed-003 fleet publishes TelegramOutbound JSON on NATS JetStream; the bridge inserts each
-- message into relay.outbound through relay.outbound_upsert (the SQL enqueue's idempotent insert) and
-- acks only after commit. Three things need a place in the database:
--  * the publisher's free-form `kind` (info, alert, trade, …). relay.outbound.kind keeps its relay
--    meaning (message|reply|alert: alerts are loop-guarded), so the publisher's word goes in its own
--    column, shown by the admin API;
--  * messages the bridge refuses (invalid JSON, contract violations) or finds in conflict (a msg_id
--    republished with a different payload): they are termed/acked on NATS, so a durable record here is
--    the only trace an operator has — nothing is dropped silently;
--  * which relay alerts were already published on NATS_ALERT_SUBJECT, so that several bridges publish
--    each alert once.

alter table relay.outbound add column if not exists publisher_kind text
  check (publisher_kind is null or char_length(publisher_kind) between 1 and 64);

-- One row per refused or conflicting JetStream message (unique per stream sequence and content, so a
-- redelivery after a crash between commit and ack adds nothing). `raw` is the message body as
-- received (it may hold message text: like relay.quarantine, for operators only, never logged).
create table if not exists relay.jetstream_rejects (
  id           bigserial primary key,
  stream       text not null,
  subject      text not null,
  stream_seq   bigint not null,
  nats_msg_id  text,                                      -- the Nats-Msg-Id header, if any
  msg_id       text,                                      -- the body's msg_id, when it had one
  reason       text not null check (reason in ('invalid_json', 'invalid', 'conflict')),
  error        text not null,                             -- what was wrong (field and rule), never the text
  outbound_id  bigint,                                    -- conflict: the existing message
  raw          bytea not null,
  sha256       text not null,
  created_at   timestamptz not null default now(),
  unique (stream, stream_seq, sha256)
);
create index if not exists jetstream_rejects_created_idx on relay.jetstream_rejects (created_at);

-- Alerts published on NATS: the highest relay alert id (relay.outbound kind=alert) already published
-- per alert subject. Alerts to the operators' chat get ids in commit order (relay.outbound_lock_chat),
-- so a cursor misses none.
create table if not exists relay.jetstream_alert_cursor (
  subject          text primary key,
  last_outbound_id bigint not null,
  updated_at       timestamptz not null default now()
);
create index if not exists outbound_alert_idx on relay.outbound (id) where kind = 'alert';
