-- 0025_relayed_methods: relay.outbound holds every relayed Bot API call, not only sendMessage.
-- Why: in REPLY_MODE=outbound every call of a handler that a user sees (sends, copies, forwards,
-- edits, deletes, pins, reactions; answers to queries) is committed with the handled mark and sent
-- after commit (libs/telegram/methods.ts says which). A row names its method and, for methods
-- other than sendMessage, every parameter but chat_id in `params` (the sendMessage columns text,
-- parse_mode, reply_markup and send_options stay null for them). Rows written before this migration
-- are sendMessage rows and read exactly as before: `method` defaults to sendMessage, the new columns
-- are null or 1.
--
-- Answers (answerCallbackQuery, …) belong to no chat: chat_id and target_chat_id are null for them
-- only, which also takes them out of every chat's FIFO (the claim's per-chat probes compare
-- target_chat_id, and null equals nothing). Edits of inline messages carry no chat either; their
-- FIFO key is 'inline:' || inline_message_id.

alter table relay.outbound add column if not exists method text not null default 'sendMessage'
  check (method ~ '^[a-z][A-Za-z]{1,63}$');
alter table relay.outbound add column if not exists params jsonb;
-- what the row counts for against the fleet-wide limits (an album: its messages; an answer: 0)
alter table relay.outbound add column if not exists message_count integer not null default 1
  check (message_count between 0 and 100);
-- the placeholder message ids the handler was given for this row's messages, in order, and the
-- real ids in the same order once delivered (telegram_message_id keeps the first, as before)
alter table relay.outbound add column if not exists placeholders bigint[];
alter table relay.outbound add column if not exists telegram_message_ids bigint[];

alter table relay.outbound alter column text drop not null;
alter table relay.outbound alter column chat_id drop not null;
alter table relay.outbound alter column target_chat_id drop not null;

-- sendMessage rows have a text and no params; every other method has params and no text
alter table relay.outbound add constraint outbound_method_payload_check
  check (case when method = 'sendMessage' then text is not null and params is null
              else params is not null and text is null end);
-- only answers to queries are chatless
alter table relay.outbound add constraint outbound_chat_required_check
  check ((chat_id is not null and target_chat_id is not null) or method like 'answer%');

-- Placeholder resolution finds the rows that handed out a placeholder (placeholders && $1).
create index if not exists outbound_placeholders_idx on relay.outbound using gin (placeholders)
  where placeholders is not null;
-- Pending answers, found without walking chat heads (outboundNextDueInMs): few, short-lived rows.
create index if not exists outbound_pending_answers_idx on relay.outbound (bot_id, next_attempt_at)
  where state = 'pending' and target_chat_id is null;

-- Files a handler uploaded (telegraf InputFile), sent as the multipart parts the row's params
-- refer to as "attach://<part>". Deleted with their row (retention prune deletes rows).
create table if not exists relay.outbound_uploads (
  outbound_id bigint not null references relay.outbound (id) on delete cascade,
  part        text   not null check (part ~ '^[A-Za-z0-9_-]{1,64}$'),
  filename    text   not null check (char_length(filename) between 1 and 256),
  bytes       bytea  not null,
  primary key (outbound_id, part)
);

comment on column relay.outbound.method is 'the Bot API method the row is sent with (libs/telegram/methods.ts: relayed methods)';
comment on column relay.outbound.params is 'methods other than sendMessage: every parameter but chat_id; files as "attach://<part>" (relay.outbound_uploads)';
comment on column relay.outbound.message_count is 'messages the row counts for against the rate limits: album/batch forward = their messages, answers = 0';
comment on column relay.outbound.placeholders is 'placeholder message ids (negative) handed to the handler for this row''s messages, in order';
comment on column relay.outbound.telegram_message_ids is 'Telegram''s message ids of the delivered row, in the order of placeholders';
