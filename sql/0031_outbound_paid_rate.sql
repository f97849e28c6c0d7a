-- 0031_outbound_paid_rate: a bot's paid-broadcast budget, and the interactive lane's chat heads.
-- Why: rows that carry allow_paid_broadcast (a paid broadcast, PAID_BROADCAST_RATE) are sent at the
-- paid rate Telegram granted the bot, not at the free 30/s that interactive traffic has first claim
-- on, so they are paced by a GCRA of their own (paid_tat, relay.outbound_rate_reserve_paid); a
-- bot-level 429 pushes both. A constant default: no table rewrite.
alter table relay.outbound_bot_rate add column if not exists paid_tat timestamptz not null default '-infinity';

-- How long a worker may sleep (outboundNextDueInMs) depends on the interactive lane's chat heads
-- first: a skip scan over this index finds them one probe per chat with interactive rows, however
-- many chats a broadcast has pending (outbound_chat_fifo_idx holds the bulk rows too, so a scan
-- for interactive heads over it reads every broadcast row). Bulk rows are not in it: a broadcast's
-- set-based insert does not pay for it.
create index if not exists outbound_interactive_fifo_idx on relay.outbound (bot_id, target_chat_id, id)
  where state in ('pending', 'delivering') and lane = 'interactive';
