-- relay.outbound_normalize_parse_mode: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0004_outbound.sql. Edit here, never in a numbered file.
create or replace function relay.outbound_normalize_parse_mode(p_parse_mode text) returns text
language plpgsql immutable as $$
begin
  if p_parse_mode is null or btrim(p_parse_mode) = '' then return null; end if;
  case lower(btrim(p_parse_mode))
    when 'markdownv2' then return 'MarkdownV2';
    when 'html' then return 'HTML';
    when 'markdown' then return 'Markdown';
    else raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: parse_mode must be MarkdownV2, HTML or Markdown, got "%s"', left(p_parse_mode, 40));
  end case;
end $$;
