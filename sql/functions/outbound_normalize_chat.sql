-- relay.outbound_normalize_chat: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0004_outbound.sql. Edit here, never in a numbered file.
create or replace function relay.outbound_normalize_chat(p_chat text, p_field text) returns text
language plpgsql immutable as $$
declare
  v text := btrim(p_chat);
begin
  if v ~ '^-?[0-9]{1,18}$' then
    if v::bigint = 0 then
      raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: %s must be a non-zero integer or @channelusername', p_field);
    end if;
    return (v::bigint)::text;
  end if;
  if v ~ '^@[A-Za-z0-9_]{4,32}$' then
    return v;
  end if;
  raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: %s must be an integer chat id or @channelusername (5-32 characters), got "%s"', p_field, left(p_chat, 40));
end $$;
