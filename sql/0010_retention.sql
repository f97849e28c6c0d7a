-- 0010_retention: what `tg-relay prune` needs to delete finished work cheaply (docs/retention.md).
-- Why: nothing was ever deleted. Prune takes the oldest finished rows of each class in small
-- batches (`order by <terminal time> limit N for update skip locked`); without an index on the
-- terminal time every batch reads the whole table (measured in docs/retention.md: a 1,000-row batch
-- on 5 M rows went from a sequential scan to an index range scan). Partial indexes hold only
-- finished rows, so pending work pays nothing for them on its hot path except the insert/update
-- of the index entry when a row finishes.
-- Chosen over native partitioning (measured and argued in docs/retention.md): rows are kept by the
-- time they *finished*, which is not known at insert, and the unique idempotency keys
-- (capture_key, msg_id, (bot_id, update_id)) could not stay unique across partitions.
-- Built without CONCURRENTLY (migrations run in a transaction): the build holds writes to each
-- table for its duration (about 1-2 s per million rows on a 2-core machine, docs/retention.md).

create index if not exists captures_delivered_at_idx on relay.captures (delivered_at) where state = 'delivered';
create index if not exists captures_failed_at_idx on relay.captures (updated_at) where state = 'failed';
create index if not exists outbound_delivered_at_idx on relay.outbound (delivered_at) where state = 'delivered';
create index if not exists outbound_failed_at_idx on relay.outbound (updated_at) where state = 'failed';
create index if not exists inbox_handled_at_idx on relay.inbox (handled_at) where state = 'handled';
create index if not exists inbox_failed_at_idx on relay.inbox (updated_at) where state = 'failed';
create index if not exists quarantine_resolved_at_idx on relay.quarantine (resolved_at) where state in ('released', 'discarded');
-- audit rows that belong to no item (admin actions, poller lease events): few, kept RETENTION_FAILED
create index if not exists attempts_audit_started_idx on relay.attempts (started_at) where subject in ('admin', 'cursor');

-- An operator retry gives a failed row a new pg-boss job and leaves the old failed job behind
-- (libs/queue/operator-actions.ts). Prune finds a row's job by the row's job_id, so the old id is
-- remembered here when job_id changes, whatever code path changes it (the TypeScript library, the
-- SQL functions, an operator's UPDATE). Prune deletes the remembered jobs after RETENTION_FAILED.
create table if not exists relay.superseded_jobs (
  id           bigserial primary key,
  source       text not null check (source in ('captures', 'outbound', 'inbox')),
  row_id       bigint not null,
  job_id       uuid not null,
  superseded_at timestamptz not null default now()
);
create index if not exists superseded_jobs_at_idx on relay.superseded_jobs (superseded_at);
create index if not exists superseded_jobs_row_idx on relay.superseded_jobs (source, row_id);

create or replace function relay.remember_superseded_job() returns trigger
language plpgsql as $$
begin
  insert into relay.superseded_jobs (source, row_id, job_id) values (tg_table_name, old.id, old.job_id);
  return null;
end $$;

drop trigger if exists captures_job_superseded on relay.captures;
create trigger captures_job_superseded after update of job_id on relay.captures
  for each row when (old.job_id is not null and old.job_id is distinct from new.job_id)
  execute function relay.remember_superseded_job();
drop trigger if exists outbound_job_superseded on relay.outbound;
create trigger outbound_job_superseded after update of job_id on relay.outbound
  for each row when (old.job_id is not null and old.job_id is distinct from new.job_id)
  execute function relay.remember_superseded_job();
drop trigger if exists inbox_job_superseded on relay.inbox;
create trigger inbox_job_superseded after update of job_id on relay.inbox
  for each row when (old.job_id is not null and old.job_id is distinct from new.job_id)
  execute function relay.remember_superseded_job();

-- One row per prune pass (CLI or periodic), read by the admin /metrics. Pruned after 30 days.
create table if not exists relay.prune_runs (
  id           bigserial primary key,
  started_at   timestamptz not null,
  finished_at  timestamptz not null default clock_timestamp(),
  duration_ms  integer not null,
  trigger      text not null check (trigger in ('cli', 'periodic', 'api')),
  worker_id    text,
  deleted      jsonb not null,                              -- { "captures": n, "attempts": n, "boss_job": n, ... }
  total        bigint not null,
  error        text
);
create index if not exists prune_runs_started_idx on relay.prune_runs (started_at);
