-- relay.bots_notify: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0034_bots.sql. Edit here, never in a numbered file.
-- Every change of relay.bots tells watching processes which bot moved (libs/bots/watch.ts).
create or replace function relay.bots_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('tg_relay_bots', coalesce(new.id, old.id));
  return null;
end $$;
