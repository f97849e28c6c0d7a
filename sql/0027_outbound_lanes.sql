-- 0027_outbound_lanes: every outbound row has a priority lane.
-- Why: a broadcast of thousands of messages used to fill the bot's global budget (30/s) for
-- minutes, so a reply to a user waited behind all of it. `interactive` (handler replies, answers,
-- alerts, API/library/SQL sends by default) has first claim on the bot's budget; `bulk`
-- (broadcasts) uses what is left (relay.outbound_rate_reserve, libs/outbound/rate-limit.ts).
-- Per-chat FIFO holds within a lane; a chat's interactive message may overtake its own pending bulk one.
-- A constant default: existing rows are interactive without a table rewrite.

alter table relay.outbound add column if not exists lane text not null default 'interactive'
  constraint outbound_lane_check check (lane in ('interactive', 'bulk'));

-- Claims walk a bot's pending rows interactive first, then by id: 'interactive' > 'bulk', so
-- `order by lane desc, id` (libs/outbound/send-kind.ts) reads this index in order.
create index if not exists outbound_pending_lane_idx on relay.outbound (bot_id, lane desc, id) where state = 'pending';

-- A bulk reservation first asks whether an interactive row of the bot is due (outbound_rate_reserve):
-- few rows, found without walking the bulk backlog.
create index if not exists outbound_pending_interactive_idx on relay.outbound (bot_id, next_attempt_at)
  where state = 'pending' and lane = 'interactive';

-- The in-flight bulk rows of a bot (the claim's bound on how much of the budget bulk may hold).
create index if not exists outbound_delivering_bulk_idx on relay.outbound (bot_id)
  where state = 'delivering' and lane = 'bulk';
