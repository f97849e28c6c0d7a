-- pg-boss moves from its default schema `pgboss` to `tg_relay_boss` (libs/db/boss.ts BOSS_SCHEMA),
-- so a bot author's own pg-boss in the same database can neither migrate nor maintain ours.
-- The move of existing jobs is done by `tg-relay migrate` right after this file
-- (libs/db/boss-schema.ts: rename the schema, or copy our queues out of a shared one); pg-boss's
-- schema itself is created by pg-boss. Here: the one SQL copy of pg-boss's insert (0004) now names
-- the new schema. PL/pgSQL bodies are checked only when run, so this works before pg-boss exists.
-- Same body as 0004 otherwise; test/integration/outbound/enqueue.test.ts still compares it
-- column for column with boss.insert, and test/integration/db/boss-contract.test.ts pins every
-- pg-boss column it writes.
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
