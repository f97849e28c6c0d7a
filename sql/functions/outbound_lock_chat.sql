-- relay.outbound_lock_chat: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0004_outbound.sql. Edit here, never in a numbered file.
/*
 * Serialises the enqueues of one chat until the calling transaction ends, so that a chat's ids are
 * assigned in commit order (see relay.outbound_upsert). Two transactions that enqueue to the same
 * chats in opposite orders can deadlock; PostgreSQL then aborts one of them (SQLSTATE 40P01), which
 * its caller retries.
 */
create or replace function relay.outbound_lock_chat(p_bot_id text, p_chat_id text) returns void
language sql as $$
  select pg_advisory_xact_lock(hashtext('relay.outbound chat'), hashtext(p_bot_id || ':' || p_chat_id));
$$;
