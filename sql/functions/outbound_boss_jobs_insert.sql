-- relay.outbound_boss_jobs_insert: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created with 0029_broadcasts.sql. Edit here, never in a numbered file.
-- The one SQL copy of the job ledger's insert (pg-boss 10.4.2's insertJobs for jobs of queue
-- outbound.send, retryLimit 0), set-based: one statement for a whole broadcast. relay.outbound_boss_job_insert
-- (one job) calls it, so test/integration/db/boss-contract.test.ts, which compares that row with
-- pg-boss's own insert and pins every column, covers this statement too.
create or replace function relay.outbound_boss_jobs_insert(p_job_ids uuid[], p_data jsonb[]) returns integer
language plpgsql as $$
declare
  v_rows integer;
begin
  insert into tg_relay_boss.job (id, name, data, priority, start_after, singleton_key, singleton_on, dead_letter,
                                 expire_in, keep_until, retry_limit, retry_delay, retry_backoff, policy)
  select j.id, q.name, j.data, 0, now(), null, null, q.dead_letter,
         case when q.expire_seconds is not null then q.expire_seconds * interval '1s' else interval '15 minutes' end,
         now() + cast(coalesce((q.retention_minutes * 60)::text, '14 days') as interval),
         0,
         case when coalesce(q.retry_backoff, false) then greatest(q.retry_delay, 1) else coalesce(q.retry_delay, 0) end,
         coalesce(q.retry_backoff, false),
         q.policy
    from unnest(p_job_ids, p_data) as j(id, data)
    join tg_relay_boss.queue q on q.name = 'outbound.send'
  on conflict do nothing;
  get diagnostics v_rows = row_count;
  if v_rows <> coalesce(cardinality(p_job_ids), 0) and not exists (select 1 from tg_relay_boss.queue q where q.name = 'outbound.send') then
    raise exception using errcode = 'TR500', message = 'RELAY_ENQUEUE_FAILED: pg-boss queue outbound.send is missing (run tg-relay migrate)';
  end if;
  return v_rows;
end $$;
