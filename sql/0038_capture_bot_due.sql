-- 0038_capture_bot_due: a bot's due captures, for a worker serving many bots.
-- Why: a worker without TELEGRAM_BOT_TOKEN delivers each registered bot's captures to that bot's
-- own collector and shares its claim between the bots (at most WORKER_BOT_CONCURRENCY of one bot's
-- captures in flight), so a slow or dead collector of one bot holds only that bot's captures. The
-- claim takes each bot's oldest due captures in turn: without this index, each bot's turn (and a
-- bot with nothing due above all) read the whole pending backlog of every bot
-- (captures_pending_idx is ordered by time alone). Like relay.inbox's inbox_dispatch_due_idx.
-- Built without CONCURRENTLY (migrations run in a transaction): it holds writes to relay.captures
-- while it builds over the pending rows only.
create index if not exists captures_bot_due_idx on relay.captures (bot_id, next_attempt_at, id) where state = 'pending';
