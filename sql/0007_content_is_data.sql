-- 0007_content_is_data: hostile or odd content is stored exactly, never a reason to stop.
-- Why: a Telegram user can send a NUL (U+0000) or an unpaired UTF-16 surrogate; both are legal in
-- JSON, but `jsonb` and `text` refuse them, so an update holding one could not be committed and
-- halted ingress. PostgreSQL's `json` type keeps its input text verbatim (escapes included), so
-- the exact original goes to a `json` column next to the queryable `jsonb` copy, in which each NUL
-- and unpaired surrogate is replaced by U+FFFD. Consumers who need the exact original read the
-- `json` column (`coalesce(raw, payload::json)` covers rows stored before this migration).
-- Also: quarantine rows say which transport brought them, and the cursor says why getUpdates is
-- failing (a wrong token or API root is retried with backoff and shown in readiness, never a halt).

alter table relay.inbox add column if not exists raw json;
comment on column relay.inbox.raw is 'the update exactly as received (json keeps the text verbatim, \u0000 and lone surrogate escapes included); null for rows stored before 0007. payload is a jsonb copy with NUL and unpaired surrogates replaced by U+FFFD';

alter table relay.captures add column if not exists payload_raw json;
comment on column relay.captures.payload_raw is 'the capture document exactly as POSTed to the collector; null for rows stored before 0007. payload (jsonb) and text replace NUL and unpaired surrogates by U+FFFD';

alter table relay.quarantine add column if not exists transport text check (transport in ('polling', 'webhook'));
comment on column relay.quarantine.transport is 'how the item arrived: polling (getUpdates) or webhook; null for rows stored before 0007';

alter table relay.cursor add column if not exists poll_error text;
alter table relay.cursor add column if not exists poll_error_kind text check (poll_error_kind in ('configuration', 'transport'));
alter table relay.cursor add column if not exists poll_error_at timestamptz;
comment on column relay.cursor.poll_error is 'why getUpdates is failing now (status and description, never a payload); cleared by the next progress';
comment on column relay.cursor.poll_error_kind is 'configuration (401/403/404: token or API root wrong, not ready at once) or transport (5xx, network, an answer that is not the Bot API''s)';
