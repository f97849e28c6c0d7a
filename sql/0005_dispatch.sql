-- 0005_dispatch: update dispatch on the worker engine (docs/dispatch.md).
-- Why: an inbox row has no 'delivering' state (its states are pending|handled|failed): a claimed
-- update stays 'pending' with claim_id/worker_id/started_at set, and, like captures and outbound,
-- its worker refreshes heartbeat_at so that the claim of a killed worker is recovered by any
-- replica within STALE_AFTER.
-- Per-chat order: an update is claimable only when no earlier update of its (bot_id, chat_id) is
-- still pending (claimed, waiting for a retry, or not yet run). That check probes the existing
-- partial index inbox_pending_chat_idx (bot_id, chat_id, update_id) WHERE state = 'pending'.
-- The two indexes below serve the claim scan (due, unclaimed rows in due order, per bot) and the
-- stale sweep (claimed rows by heartbeat).

alter table relay.inbox add column if not exists heartbeat_at timestamptz;
comment on column relay.inbox.heartbeat_at is 'last heartbeat of the worker dispatching it (claim_id set); null otherwise';

create index if not exists inbox_dispatch_due_idx on relay.inbox (bot_id, next_attempt_at, id)
  where state = 'pending' and claim_id is null;
create index if not exists inbox_dispatch_claimed_idx on relay.inbox (coalesce(heartbeat_at, started_at))
  where state = 'pending' and claim_id is not null;
