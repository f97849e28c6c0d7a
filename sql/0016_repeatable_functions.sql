-- 0016_repeatable_functions: SQL functions move to repeatable files (issue 17).
-- Why: 0004 held tables and ten functions in one versioned file, so changing one function meant
-- copying it whole into a new numbered migration (0011 did). Functions now live one per file in
-- sql/functions/*.sql with their latest definition; `tg-relay migrate` applies them after the
-- numbered migrations, under the same advisory lock, and re-applies a file only when its sha256
-- differs from the one recorded here. Tables and indexes stay in numbered migrations.
create table if not exists relay.schema_repeatables (
  name       text primary key,            -- file name under sql/functions/, e.g. outbound_upsert.sql
  sha256     text not null,               -- hex digest of the file as applied
  applied_at timestamptz not null default now()
);
