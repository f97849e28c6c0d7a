-- 0006_admin: indexes for the admin API (libs/admin).
-- Why: the lists are ordered newest first by (time, id) with keyset pagination and filter by state,
-- chat and time range; each filter needs an index that yields rows in that order, or a list of a
-- big table sorts the whole table. (state, time) indexes exist since 0001; these add the
-- unfiltered and per-chat orders, and a partial index for the audit trail of admin actions.
-- /v1/stats needs nothing new: per-state counts are index scans of (state, time) capped at 10,001
-- entries (bigger states are read from planner statistics) and the oldest pending row is the first
-- entry of the same index.
-- Built without CONCURRENTLY (migrations run in a transaction): on a big existing table this holds
-- writes for the time of the build; apply it at a quiet moment.

create index if not exists captures_created_idx on relay.captures (created_at, id);

create index if not exists outbound_created_idx on relay.outbound (created_at, id);
create index if not exists outbound_chat_created_idx on relay.outbound (chat_id, created_at);
create index if not exists outbound_target_created_idx on relay.outbound (target_chat_id, created_at);

create index if not exists inbox_received_idx on relay.inbox (received_at, id);
create index if not exists inbox_chat_received_idx on relay.inbox (chat_id, received_at);

create index if not exists quarantine_created_idx on relay.quarantine (created_at, id);

-- GET /v1/audit and bulk actions in an item's history: admin rows are few among millions of attempts.
create index if not exists attempts_admin_idx on relay.attempts (id) where subject = 'admin';
