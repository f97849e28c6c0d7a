-- relay.outbound_boss_job_insert: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0011_boss_schema.sql. Edit here, never in a numbered file.
-- The one SQL copy of the job ledger's insert (pg-boss 10.4.2's insertJobs for one job of queue
-- outbound.send, retryLimit 0), used by relay.enqueue_outbound so a service in any language enqueues
-- in its own transaction. Owned by the job ledger adapter (libs/db/boss.ts):
-- test/integration/db/boss-contract.test.ts compares the row it writes with pg-boss's own insert and
-- pins every column it reads or writes. PL/pgSQL bodies are checked only when run.
create or replace function relay.outbound_boss_job_insert(p_job_id uuid, p_data jsonb) returns void
language plpgsql as $$
declare
  v_rows integer;
begin
  insert into tg_relay_boss.job (id, name, data, priority, start_after, singleton_key, singleton_on, dead_letter,
                                 expire_in, keep_until, retry_limit, retry_delay, retry_backoff, policy)
  select p_job_id, q.name, p_data, 0, now(), null, null, q.dead_letter,
         case when q.expire_seconds is not null then q.expire_seconds * interval '1s' else interval '15 minutes' end,
         now() + cast(coalesce((q.retention_minutes * 60)::text, '14 days') as interval),
         0,
         case when coalesce(q.retry_backoff, false) then greatest(q.retry_delay, 1) else coalesce(q.retry_delay, 0) end,
         coalesce(q.retry_backoff, false),
         q.policy
    from tg_relay_boss.queue q
   where q.name = 'outbound.send'
  on conflict do nothing;
  get diagnostics v_rows = row_count;
  if v_rows <> 1 then
    raise exception using errcode = 'TR500', message = 'RELAY_ENQUEUE_FAILED: pg-boss queue outbound.send is missing (run tg-relay migrate)';
  end if;
end $$;
