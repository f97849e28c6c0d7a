-- 0030_broadcast_recipients: a broadcast's recipients are staged, and fed into relay.outbound at
-- the pace of sending.
-- Why: one relay.outbound row (17 indexes) and one ledger job per recipient, written when the
-- broadcast is created, cap creation at about 19,000 recipients/s, although at 30 msg/s a bot
-- sends only what it can in the next minute. The narrow table below takes the whole audience in
-- one set-based statement; workers (libs/broadcasts/feeder.ts, relay.broadcast_feed) materialise
-- the next chunk of it as outbound rows + ledger jobs when the broadcast's pending rows run low.
--
-- Exactly once: the broadcast's cursor (`fed`: recipients with seq <= fed are fed) advances in the
-- transaction that deletes those recipients and inserts their rows (msg_id `bcast:{id}:{chat}`,
-- `on conflict do nothing`), under the broadcast's row lock. A recipient row exists only until it is
-- fed (or its broadcast is cancelled), so the table holds only what is still to send.
--
-- Recipients are stored 1,000 to a row (recipient seq = chunk * 1000 + its position, 1-based): a
-- row and an index entry per recipient cost more than the rest of staging together (measured
-- 100,000 recipients: 0.85-1.25 s as rows vs 0.46 s as 100 chunk rows, load average 15).

create table if not exists relay.broadcast_recipients (
  broadcast_id bigint  not null,
  chunk        integer not null check (chunk >= 0),
  -- distinct chats, at most 1,000; every chunk but the last is full
  chat_ids     text[]  not null check (cardinality(chat_ids) between 1 and 1000),
  primary key (broadcast_id, chunk)
);

-- staged: recipients stored at creation (0 for broadcasts enqueued whole, before this migration);
-- fed: the cursor, recipients with seq <= fed were fed (or skipped at feed time).
alter table relay.broadcasts add column if not exists staged integer not null default 0 check (staged >= 0);
alter table relay.broadcasts add column if not exists fed integer not null default 0 check (fed >= 0);
alter table relay.broadcasts add constraint broadcasts_fed_staged_check check (fed <= staged);

-- what the feeder looks for on every tick
create index if not exists broadcasts_feeding_idx on relay.broadcasts (id) where state = 'running' and fed < staged;
