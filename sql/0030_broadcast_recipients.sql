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

create table if not exists relay.broadcast_recipients (
  broadcast_id bigint  not null,
  -- 1..relay.broadcasts.staged, dense: a chunk is a range of the primary key
  seq          integer not null,
  chat_id      text    not null,
  primary key (broadcast_id, seq)
);

-- staged: recipients stored at creation (0 for broadcasts enqueued whole, before this migration);
-- fed: the cursor, recipients with seq <= fed were fed (or skipped at feed time).
alter table relay.broadcasts add column if not exists staged integer not null default 0 check (staged >= 0);
alter table relay.broadcasts add column if not exists fed integer not null default 0 check (fed >= 0);
alter table relay.broadcasts add constraint broadcasts_fed_staged_check check (fed <= staged);

-- what the feeder looks for on every tick
create index if not exists broadcasts_feeding_idx on relay.broadcasts (id) where state = 'running' and fed < staged;
