-- relay.outbound_boss_job_insert: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0011_boss_schema.sql. Edit here, never in a numbered file.
-- One job of queue outbound.send through the one SQL copy of the job ledger's insert
-- (relay.outbound_boss_jobs_insert), used by relay.enqueue_outbound so a service in any language enqueues
-- in its own transaction. Owned by the job ledger adapter (libs/db/boss.ts):
-- test/integration/db/boss-contract.test.ts compares the row it writes with pg-boss's own insert and
-- pins every column it reads or writes. PL/pgSQL bodies are checked only when run.
create or replace function relay.outbound_boss_job_insert(p_job_id uuid, p_data jsonb) returns void
language plpgsql as $$
begin
  if relay.outbound_boss_jobs_insert(array[p_job_id], array[p_data]) <> 1 then
    raise exception using errcode = 'TR500', message = 'RELAY_ENQUEUE_FAILED: pg-boss queue outbound.send is missing (run tg-relay migrate)';
  end if;
end $$;
