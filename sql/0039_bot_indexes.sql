-- 0039_bot_indexes: one bot's page of an admin list, without reading the other bots' rows.
-- Why: with many bots in one database, GET /v1/{captures,outbound,inbox,quarantine}?bot_id= and
-- /v1/broadcasts?bot_id= order by time (or id) and filter by bot. The time indexes (0006) then read
-- the newest rows of every bot until the page is full: a quiet bot among 200,000 rows of others
-- cost a scan of all of them (captures, outbound: ~75 ms), and quarantine a seq scan and a sort; the
-- inbox sorted all of a bot's rows found by (bot_id, update_id). Each index below leads with the bot
-- and then the list's sort key, so a page (and the next, from its cursor) is one index range.
-- /v1/audit?bot_id= filtered on a bot computed per row (from details, or by looking up the subject
-- row): every admin row was read and the lookups run for each (~500 ms for 150,000 admin rows). The
-- admin API now stores that bot in details.bot_id when it writes the row (libs/admin/queries.ts
-- auditInsert); the rows written before are given it here, so the list filters and shows
-- details->>'bot_id' alone, through a partial index of the admin rows.
-- Built without CONCURRENTLY (migrations run in a transaction): each holds writes to its table while
-- it builds (an index of the whole table for the four lists).
create index if not exists captures_bot_created_idx on relay.captures (bot_id, created_at, id);
create index if not exists outbound_bot_created_idx on relay.outbound (bot_id, created_at, id);
create index if not exists inbox_bot_received_idx on relay.inbox (bot_id, received_at, id);
create index if not exists quarantine_bot_created_idx on relay.quarantine (bot_id, created_at, id);
create index if not exists broadcasts_bot_idx on relay.broadcasts (bot_id, id);

-- the bot of each earlier audit row, as the audit list computed it: the bot it names, else the bot
-- of the row it acted on (an item, a quarantined update, a broadcast); none for actions across bots
update relay.attempts a
   set details = a.details || jsonb_build_object('bot_id', b.bot_id)
  from (
    select x.id,
           coalesce(
             x.details->'filter'->>'bot_id',
             case when x.details->>'kind' = 'bot' then x.subject_key end,
             case x.details->>'kind'
               when 'captures' then (select t.bot_id from relay.captures t where t.id = x.subject_id)
               when 'outbound' then (select t.bot_id from relay.outbound t where t.id = x.subject_id)
               when 'inbox' then (select t.bot_id from relay.inbox t where t.id = x.subject_id)
               when 'quarantine' then (select t.bot_id from relay.quarantine t where t.id = x.subject_id)
               when 'broadcast' then (select t.bot_id from relay.broadcasts t where t.id = x.subject_id)
             end) as bot_id
      from relay.attempts x
     where x.subject = 'admin' and x.details->>'bot_id' is null
  ) b
 where a.id = b.id and b.bot_id is not null;

create index if not exists attempts_admin_bot_idx on relay.attempts ((details->>'bot_id'), id) where subject = 'admin';
