-- 0003_queue: claim heartbeats for the worker engine (libs/queue).
-- Why: a claimed row (state 'delivering') must show that its worker is still alive, so that work
-- held by a dead worker (kill -9) returns to 'pending' within STALE_AFTER while a long delivery by a
-- live worker is left alone. Workers refresh heartbeat_at for their claims every STALE_AFTER/5;
-- a claim whose heartbeat is older than 4/5 of STALE_AFTER is recovered by any replica's sweep.
-- No new index: the sweep reads only 'delivering' rows through the existing partial indexes
-- captures_delivering_idx / outbound_delivering_idx (a few rows per worker), and heartbeats and
-- outcome writes address rows by primary key.

alter table relay.captures add column if not exists heartbeat_at timestamptz;
alter table relay.outbound add column if not exists heartbeat_at timestamptz;

comment on column relay.captures.heartbeat_at is 'last heartbeat of the worker holding the claim (state delivering); null otherwise';
comment on column relay.outbound.heartbeat_at is 'last heartbeat of the worker holding the claim (state delivering); null otherwise';
