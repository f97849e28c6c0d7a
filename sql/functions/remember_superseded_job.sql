-- relay.remember_superseded_job: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0010_retention.sql. Edit here, never in a numbered file.
create or replace function relay.remember_superseded_job() returns trigger
language plpgsql as $$
begin
  insert into relay.superseded_jobs (source, row_id, job_id) values (tg_table_name, old.id, old.job_id);
  return null;
end $$;
