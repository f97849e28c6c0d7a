-- 0024_inbox_claimed_chat: a chat's claimed update, found by chat.
-- Why: an inbox row is claimable only while no row of its chat is claimed (besides no earlier
-- pending row): an operator's retry puts a failed update back as its chat's earliest pending row,
-- and without this rule it was claimed beside the chat's later update still in flight. Claimed rows
-- are few (at most the fleet's concurrency), so this partial index stays tiny and the probe is one
-- index lookup, not a walk over a busy chat's queued updates.

create index if not exists inbox_claimed_chat_idx on relay.inbox (bot_id, chat_id)
  where state = 'pending' and claim_id is not null;
